#include "harness/scenario/engine_registry.h"

#include <stdexcept>

#include "engine/common/error.h"
#include "harness/scenario/peer_scenario.h"
#include "harness/scenario/scenario.h"

namespace shardbench {
namespace {

void NothingToRefuse(const Scenario&, const std::string&) {}

void ValidatePerParam(const Scenario& s, const std::string& src) {
  if (!s.sharding.use_orig_params) {
    throw InputError(src + ": sharding.use_orig_params=false is a flat-engine (FSDP1) option; engine=per_param "
                     "(FSDP2) always keeps each parameter as its own tensor");
  }
}

template <shard::EngineKind kind>
shard::EngineKind Like(const Scenario&) {
  return kind;
}

shard::EngineKind LikeAccelerate(const Scenario& s) {
  return s.accelerate.fsdp_version == 1 ? shard::EngineKind::kFlat : shard::EngineKind::kPerParam;
}

}  // namespace

const std::vector<EngineSpec>& EngineRegistry() {
  using shard::EngineKind;
  static const std::vector<EngineSpec> specs = {
      {Engine::kReference, "reference", EngineKind::kReference, Like<EngineKind::kReference>, nullptr, NothingToRefuse},
      {Engine::kFlat, "flat", EngineKind::kFlat, Like<EngineKind::kFlat>, nullptr, NothingToRefuse},
      {Engine::kPerParam, "per_param", EngineKind::kPerParam, Like<EngineKind::kPerParam>, nullptr, ValidatePerParam},
      {Engine::kTorchFsdp1, "torch_fsdp1", std::nullopt, Like<EngineKind::kFlat>, "torch_fsdp.peer", ValidatePeerScenario},
      {Engine::kTorchFsdp2, "torch_fsdp2", std::nullopt, Like<EngineKind::kPerParam>, "torch_fsdp.peer",
       ValidatePeerScenario},
      {Engine::kAccelerate, "accelerate", std::nullopt, LikeAccelerate, "torch_fsdp.peer", ValidatePeerScenario},
      // torchtune 0.6.1 needs its own torchao and datasets beside the project's torch (peers/README.md).
      {Engine::kTorchtune, "torchtune", std::nullopt, Like<EngineKind::kPerParam>, "torch_fsdp.peer",
       ValidatePeerScenario, "torchtune"},
  };
  return specs;
}

const EngineSpec& SpecOf(Engine engine) {
  for (const auto& spec : EngineRegistry()) {
    if (spec.engine == engine) return spec;
  }
  throw std::logic_error("internal error: engine " + std::to_string(static_cast<int>(engine)) +
                         " has no spec in harness/scenario/engine_registry.cc");
}

const char* EngineName(Engine engine) { return SpecOf(engine).name; }

bool IsPeerEngine(Engine engine) { return SpecOf(engine).is_peer(); }

std::optional<shard::EngineKind> OurEngineKind(Engine engine) { return SpecOf(engine).ours; }

shard::EngineKind EngineKindLike(const Scenario& s) { return SpecOf(s.engine).predicted_by(s); }

}  // namespace shardbench
