#include "harness/scenario/scenario_choices.h"

#include "engine/shard/mixed_precision.h"

namespace shardbench {

const char* EngineName(Engine engine) {
  switch (engine) {
    case Engine::kReference: return shard::EngineKindName(shard::EngineKind::kReference);
    case Engine::kFlat: return shard::EngineKindName(shard::EngineKind::kFlat);
    case Engine::kPerParam: return shard::EngineKindName(shard::EngineKind::kPerParam);
    case Engine::kTorchFsdp1: return "torch_fsdp1";
    case Engine::kTorchFsdp2: return "torch_fsdp2";
  }
  return "?";
}

bool IsPeerEngine(Engine engine) { return engine == Engine::kTorchFsdp1 || engine == Engine::kTorchFsdp2; }

std::optional<shard::EngineKind> OurEngineKind(Engine engine) {
  switch (engine) {
    case Engine::kReference: return shard::EngineKind::kReference;
    case Engine::kFlat: return shard::EngineKind::kFlat;
    case Engine::kPerParam: return shard::EngineKind::kPerParam;
    case Engine::kTorchFsdp1:
    case Engine::kTorchFsdp2: break;
  }
  return std::nullopt;
}

shard::EngineKind EngineKindLike(Engine engine) {
  if (engine == Engine::kTorchFsdp1) return shard::EngineKind::kFlat;
  if (engine == Engine::kTorchFsdp2) return shard::EngineKind::kPerParam;
  return *OurEngineKind(engine);
}

const char* InitName(Init init) { return init == Init::kMeta ? "meta" : "eager"; }

const char* BackendName(Backend backend) { return backend == Backend::kNccl ? "nccl" : "gloo"; }

std::string ModelDtypeName(const std::optional<c10::ScalarType>& dtype) {
  return dtype ? shard::DtypeName(*dtype) : "auto";
}

}  // namespace shardbench
