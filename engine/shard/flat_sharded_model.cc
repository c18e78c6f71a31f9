#include "engine/shard/flat_sharded_model.h"

#include "engine/shard/full_params.h"

namespace shardbench::shard {

FlatShardedModel::FlatShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm,
                                   FlatShardingOptions options)
    : model_(model), options_(options) {
  for (auto& plan : PlanUnits(model, options.policy)) {
    FlatUnitOptions unit_options;
    unit_options.use_orig_params = options.use_orig_params;
    unit_options.reshard_after_forward = options.reshard_after_forward;
    unit_options.mixed_precision = options.mixed_precision;
    unit_options.materialize = options.materialize;
    unit_options.is_root = plan.module == &model;
    unit_options.unsharded_bytes = &unsharded_bytes_;
    unit_options.unsharded_grad_bytes = &unsharded_grad_bytes_;
    if (options.backward_prefetch) {
      unit_options.after_backward_unshard = [this](FlatParamUnit& unit) {
        if (FlatParamUnit* next = order_.neighbour(&unit, -1)) next->prefetch_for_backward();
      };
    }
    units_.push_back(std::make_unique<FlatParamUnit>(std::move(plan), comm, unit_options));
    by_module_[&units_.back()->module()] = units_.back().get();
    units_.back()->module().set_forward_hooks(this);
  }
}

FlatShardedModel::~FlatShardedModel() {
  for (auto& u : units_) u->module().set_forward_hooks(nullptr);
}

std::vector<model::NamedTensor> FlatShardedModel::named_parameters() {
  if (options_.use_orig_params) return model_.named_parameters();
  std::vector<model::NamedTensor> out;
  for (auto& u : units_) {
    if (!u->params().empty()) out.push_back({u->flat_param_name(), const_cast<at::Tensor*>(&u->flat_shard())});
  }
  return out;
}

void FlatShardedModel::pre_forward(model::Module& module, at::ArrayRef<at::Tensor> inputs) {
  FlatParamUnit* unit = by_module_.at(&module);
  unit->unshard_for_forward();
  unit->hook_inputs_for_reshard(inputs);
  if (order_.record(unit) && options_.forward_prefetch) {
    if (FlatParamUnit* next = order_.neighbour(unit, +1)) next->prefetch_for_forward();
  }
}

at::Tensor FlatShardedModel::post_forward(model::Module& module, at::Tensor output) {
  return by_module_.at(&module)->post_forward(std::move(output));
}

void FlatShardedModel::before_recompute(model::Module& module) {
  by_module_.at(&module)->prepare_recompute();
}

void FlatShardedModel::zero_grad() {
  for (auto& u : units_) u->zero_grad();
}

void FlatShardedModel::after_backward() {
  for (auto& u : units_) u->finish_backward();
}

std::vector<at::Tensor> FlatShardedModel::local_grads() {
  std::vector<at::Tensor> out;
  for (auto& p : named_parameters()) {
    if (p.slot->requires_grad() && p.slot->grad().defined()) out.push_back(p.slot->grad());
  }
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> FlatShardedModel::gather_full_params() {
  return GatherInModelOrder(model_, [this](const FullParamFn& fn) { for_each_full_param(fn); });
}

void FlatShardedModel::for_each_full_param(const std::function<void(const std::string&, const at::Tensor&)>& fn) {
  for (auto& u : units_) {
    for (auto& [name, t] : u->gather_full_params()) fn(name, t);
  }
}

ShardBytes FlatShardedModel::bytes() const {
  ShardBytes b;
  for (const auto& u : units_) {
    b.params_sharded += u->sharded_param_bytes();
    b.params_sharded_by_dtype[u->param_dtype()] += u->sharded_param_bytes();
    b.params_unsharded += u->unsharded_param_bytes();
    b.params_unsharded_peak = unsharded_bytes_.peak;
    b.grads_unsharded_peak = unsharded_grad_bytes_.peak;
    b.grads_sharded += u->sharded_grad_bytes();
  }
  return b;
}

}  // namespace shardbench::shard
