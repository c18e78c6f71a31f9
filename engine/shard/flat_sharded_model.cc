#include "engine/shard/flat_sharded_model.h"

#include <map>

#include "engine/common/error.h"

namespace shardbench::shard {
namespace {

FlatUnitOptions FlatUnitOptionsFor(bool use_orig_params) {
  FlatUnitOptions u;
  u.use_orig_params = use_orig_params;
  return u;
}

}  // namespace

FlatShardedModel::FlatShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm,
                                   const EngineOptions& options)
    : UnitDriver(model, comm, options, FlatUnitOptionsFor(options.use_orig_params)),
      use_orig_params_(options.use_orig_params) {}

std::vector<model::NamedTensor> FlatShardedModel::named_parameters() {
  if (use_orig_params_) return model().named_parameters();
  std::vector<model::NamedTensor> out;
  for (auto& u : units()) {
    if (!u->params().empty()) out.push_back({u->flat_param_name(), const_cast<at::Tensor*>(&u->flat_shard())});
  }
  return out;
}

std::vector<at::Tensor> FlatShardedModel::local_grads() {
  std::vector<at::Tensor> out;
  for (auto& p : named_parameters()) {
    if (p.slot->requires_grad() && p.slot->grad().defined()) out.push_back(p.slot->grad());
  }
  return out;
}

std::vector<ParamPiece> FlatShardedModel::pieces() {
  std::map<std::string, ParamPiece> by_name;
  for (const auto& unit : units()) {
    const at::Tensor shard = unit->flat_shard().detach();
    const int64_t chunk_start = static_cast<int64_t>(unit->rank()) * unit->shard_numel();
    for (const auto& p : unit->params()) {
      const auto [start, length] = unit->local_range(p);
      ParamPiece piece;
      piece.name = p.name;
      piece.shape = p.shape;
      piece.begin = length > 0 ? chunk_start + start - p.offset : 0;
      piece.numel = length;
      piece.trainable = p.requires_grad;
      piece.param = shard.narrow(0, start, length);
      if (use_orig_params_) {
        piece.owner = p.orig;  // the optimizer holds the original, a 1-D view of exactly this range
      } else {
        piece.owner = unit->flat_shard();
        piece.owner_offset = start;
      }
      by_name[p.name] = std::move(piece);
    }
  }
  std::vector<ParamPiece> out;
  for (auto& p : model().named_parameters()) {
    auto it = by_name.find(p.name);
    if (it == by_name.end()) throw InfraError("flat engine: parameter '" + p.name + "' is in no unit");
    out.push_back(std::move(it->second));
  }
  return out;
}

LocalTensors FlatShardedModel::local_tensors() {
  LocalTensors out;
  for (const auto& u : units()) {
    if (u->params().empty()) continue;
    out.params.push_back({u->flat_param_name(), u->flat_shard().detach()});
    if (use_orig_params_) {
      for (const auto& p : u->params()) {
        if (p.requires_grad) out.owners.push_back({p.name, p.orig});
      }
    } else if (u->requires_grad()) {
      out.owners.push_back({u->flat_param_name(), u->flat_shard()});
    }
  }
  return out;
}

nlohmann::json FlatShardedModel::local_layout() const {
  nlohmann::json units_json = nlohmann::json::array();
  for (const auto& u : units()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : u->params()) params.push_back({{"name", p.name}, {"shape", p.shape}, {"offset", p.offset}});
    units_json.push_back(
        {{"unit", u->path().empty() ? "<root>" : u->path()}, {"shard_numel", u->shard_numel()}, {"params", params}});
  }
  return {{"use_orig_params", use_orig_params_}, {"units", units_json}};
}

}  // namespace shardbench::shard
