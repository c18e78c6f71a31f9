#include "engine/shard/replicated_model.h"

namespace shardbench::shard {

ReplicatedModel::ReplicatedModel(model::LlamaForCausalLM& model, comm::Communicator* comm)
    : ShardedModel(model), all_reduce_(model, comm) {}

void ReplicatedModel::for_each_full_param(const FullParamFn& fn) {
  for (auto& p : model().named_parameters()) fn(p.name, p.slot->detach());
}

std::vector<ParamPiece> ReplicatedModel::pieces() {
  std::vector<ParamPiece> out;
  for (auto& p : model().named_parameters()) {
    ParamPiece piece;
    piece.name = p.name;
    piece.shape = p.slot->sizes().vec();
    piece.numel = p.slot->numel();
    piece.replicated = true;
    piece.trainable = p.slot->requires_grad();
    piece.param = p.slot->detach().view({-1});
    piece.owner = *p.slot;
    out.push_back(std::move(piece));
  }
  return out;
}

LocalTensors ReplicatedModel::local_tensors() {
  LocalTensors out;
  for (auto& p : model().named_parameters()) {
    out.params.push_back({p.name, p.slot->detach()});
    if (p.slot->requires_grad()) out.owners.push_back({p.name, *p.slot});
  }
  return out;
}

nlohmann::json ReplicatedModel::local_layout() const {
  nlohmann::json params = nlohmann::json::array();
  for (auto& p : model().named_parameters()) params.push_back({{"name", p.name}, {"shape", p.slot->sizes().vec()}});
  return {{"params", params}};
}

memory::MemoryRecord ReplicatedModel::memory() const {
  using memory::Category;
  memory::MemoryRecord m;
  for (auto& p : model().named_parameters()) {
    m.held[Category::kParamsUnsharded] += p.slot->nbytes();
    m.params_by_dtype[p.slot->scalar_type()] += p.slot->nbytes();
    if (p.slot->grad().defined()) m.held[Category::kGrads] += p.slot->grad().nbytes();
  }
  // Every parameter is full all the time; no gradient is ever reduce-scattered.
  m.peak[Category::kParamsUnsharded] = m.held[Category::kParamsUnsharded];
  return m;
}

}  // namespace shardbench::shard
