#include "engine/shard/per_param_sharded_model.h"

#include <map>

namespace shardbench::shard {

PerParamShardedModel::PerParamShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm,
                                           const EngineOptions& options)
    : UnitDriver(model, comm, options, PerParamUnitOptions{}) {}

std::vector<model::NamedTensor> PerParamShardedModel::named_parameters() {
  std::map<std::string, model::NamedTensor> by_name;
  for (auto& u : units()) {
    for (auto& p : u->params()) by_name[p.name] = {p.name, &p.sharded};
  }
  std::vector<model::NamedTensor> out;
  for (auto& p : model().named_parameters()) out.push_back(by_name.at(p.name));
  return out;
}

std::vector<at::Tensor> PerParamShardedModel::local_grads() {
  std::vector<at::Tensor> out;
  for (auto& u : units()) {
    for (auto& p : u->params()) {
      if (p.requires_grad && p.sharded.grad().defined()) out.push_back(p.sharded.grad());
    }
  }
  return out;
}

std::vector<ParamPiece> PerParamShardedModel::pieces() {
  std::map<std::string, ParamPiece> by_name;
  for (const auto& unit : units()) {
    for (auto& p : unit->params()) {
      ParamPiece piece;
      piece.name = p.name;
      piece.shape = p.shape;
      piece.begin = p.layout.first_row(unit->rank()) * p.layout.row_numel;
      piece.numel = p.sharded.numel();
      piece.trainable = p.requires_grad;
      piece.param = p.sharded.detach().view({-1});
      piece.owner = p.sharded;  // a row shard: the optimizer holds exactly this range
      by_name[p.name] = std::move(piece);
    }
  }
  std::vector<ParamPiece> out;
  for (auto& p : model().named_parameters()) out.push_back(std::move(by_name.at(p.name)));
  return out;
}

LocalTensors PerParamShardedModel::local_tensors() {
  LocalTensors out;
  for (const auto& u : units()) {
    for (auto& p : u->params()) {
      out.params.push_back({p.name, p.sharded.detach()});
      if (p.requires_grad) out.owners.push_back({p.name, p.sharded});
    }
  }
  return out;
}

nlohmann::json PerParamShardedModel::local_layout() const {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& u : units()) {
    for (const auto& p : u->params()) {
      params.push_back({{"name", p.name}, {"shape", p.shape}, {"rows_per_rank", p.layout.rows_per_rank},
                        {"unit", u->path().empty() ? "<root>" : u->path()}});
    }
  }
  return {{"params", params}};
}

}  // namespace shardbench::shard
