#include "engine/shard/sharded_model.h"

#include "engine/common/error.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/shard/per_param_sharded_model.h"
#include "engine/shard/replicated_model.h"

namespace shardbench::shard {

const char* EngineKindName(EngineKind kind) {
  switch (kind) {
    case EngineKind::kReference: return "reference";
    case EngineKind::kFlat: return "flat";
    case EngineKind::kPerParam: return "per_param";
  }
  return "?";
}

EngineKind ParseEngineKind(const std::string& name, const std::string& field) {
  for (EngineKind k : {EngineKind::kReference, EngineKind::kFlat, EngineKind::kPerParam}) {
    if (name == EngineKindName(k)) return k;
  }
  throw InputError(field + ": unknown engine '" + name + "' (reference, flat or per_param)");
}

std::vector<std::pair<std::string, at::Tensor>> ShardedModel::gather_full_params() {
  return GatherInModelOrder(model_, [this](const FullParamFn& fn) { for_each_full_param(fn); });
}

std::unique_ptr<ShardedModel> MakeShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm,
                                               const EngineOptions& o) {
  switch (o.kind) {
    case EngineKind::kFlat:
      return std::make_unique<FlatShardedModel>(model, comm, o);
    case EngineKind::kPerParam:
      return std::make_unique<PerParamShardedModel>(model, comm, o);
    case EngineKind::kReference:
      break;
  }
  model::MaterializeParameters(model, o.materialize);
  return std::make_unique<ReplicatedModel>(model, comm);
}

}  // namespace shardbench::shard
