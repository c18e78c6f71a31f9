#include "harness/scenario/scenario_choices.h"

#include "engine/shard/mixed_precision.h"

namespace shardbench {

const char* CheckpointTypeName(CheckpointType type) {
  switch (type) {
    case CheckpointType::kNone: return "none";
    case CheckpointType::kFull: return "full";
    case CheckpointType::kSharded: return "sharded";
    case CheckpointType::kLocal: return "local";
    case CheckpointType::kAdapter: return "adapter";
  }
  return "?";
}

const char* OptimizerBuildName(OptimizerBuild build) {
  return build == OptimizerBuild::kBeforeWrap ? "before_wrap" : "after_wrap";
}

const char* DataSourceName(DataSource source) { return source == DataSource::kTokens ? "tokens" : "synthetic"; }

const char* UpcastName(Upcast upcast) { return upcast == Upcast::kAll ? "all" : "trainable"; }

const char* InitName(Init init) { return init == Init::kMeta ? "meta" : "eager"; }

const char* BackendName(Backend backend) { return backend == Backend::kNccl ? "nccl" : "gloo"; }

std::string ModelDtypeName(const std::optional<c10::ScalarType>& dtype) {
  return dtype ? shard::DtypeName(*dtype) : "auto";
}

}  // namespace shardbench
