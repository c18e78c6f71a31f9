#include "engine/shard/per_param_sharded_model.h"

#include "engine/shard/full_params.h"

namespace shardbench::shard {

PerParamShardedModel::PerParamShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm,
                                           PerParamShardingOptions options)
    : model_(model), options_(options) {
  for (auto& plan : PlanUnits(model, options.policy)) {
    PerParamUnitOptions o;
    o.reshard_after_forward = options.reshard_after_forward;
    o.mixed_precision = options.mixed_precision;
    o.materialize = options.materialize;
    if (options.backward_prefetch) {
      o.after_backward_unshard = [this](PerParamUnit& unit) {
        if (PerParamUnit* next = order_.neighbour(&unit, -1)) next->prefetch_for_backward();
      };
    }
    o.is_root = plan.module == &model;
    o.unsharded_bytes = &unsharded_bytes_;
    o.unsharded_grad_bytes = &unsharded_grad_bytes_;
    units_.push_back(std::make_unique<PerParamUnit>(std::move(plan), comm, o));
    by_module_[&units_.back()->module()] = units_.back().get();
    units_.back()->module().set_forward_hooks(this);
  }
}

PerParamShardedModel::~PerParamShardedModel() {
  for (auto& u : units_) u->module().set_forward_hooks(nullptr);
}

std::vector<model::NamedTensor> PerParamShardedModel::named_parameters() {
  std::map<std::string, model::NamedTensor> by_name;
  for (auto& u : units_) {
    for (auto& p : u->params()) by_name[p.name] = {p.name, &p.sharded};
  }
  std::vector<model::NamedTensor> out;
  for (auto& p : model_.named_parameters()) out.push_back(by_name.at(p.name));
  return out;
}

void PerParamShardedModel::pre_forward(model::Module& module, at::ArrayRef<at::Tensor> inputs) {
  PerParamUnit* unit = by_module_.at(&module);
  unit->pre_forward(inputs);
  if (order_.record(unit) && options_.forward_prefetch) {
    if (PerParamUnit* next = order_.neighbour(unit, +1)) next->prefetch_for_forward();
  }
}

at::Tensor PerParamShardedModel::post_forward(model::Module& module, at::Tensor output) {
  return by_module_.at(&module)->post_forward(std::move(output));
}

void PerParamShardedModel::before_recompute(model::Module& module) {
  by_module_.at(&module)->prepare_recompute();
}

void PerParamShardedModel::zero_grad() {
  for (auto& u : units_) u->zero_grad();
}

void PerParamShardedModel::after_backward() {
  // Root last, as FSDP2's final callback: units whose inputs needed no gradient finish here.
  for (auto& u : units_) u->post_backward();
}

std::vector<at::Tensor> PerParamShardedModel::local_grads() {
  std::vector<at::Tensor> out;
  for (auto& u : units_) {
    for (auto& p : u->params()) {
      if (p.requires_grad && p.sharded.grad().defined()) out.push_back(p.sharded.grad());
    }
  }
  return out;
}

void PerParamShardedModel::for_each_full_param(const std::function<void(const std::string&, const at::Tensor&)>& fn) {
  for (auto& u : units_) {
    for (auto& [name, t] : u->gather_full_params()) fn(name, t);
  }
}

std::vector<std::pair<std::string, at::Tensor>> PerParamShardedModel::gather_full_params() {
  return GatherInModelOrder(model_, [this](const FullParamFn& fn) { for_each_full_param(fn); });
}

ShardBytes PerParamShardedModel::bytes() const {
  ShardBytes b;
  for (const auto& u : units_) {
    b.params_sharded += u->sharded_param_bytes();
    for (const auto& p : u->params()) b.params_sharded_by_dtype[p.padded.scalar_type()] += p.padded.nbytes();
    b.params_unsharded += u->unsharded_param_bytes();
    b.grads_sharded += u->sharded_grad_bytes();
  }
  b.params_unsharded_peak = unsharded_bytes_.peak;
  b.grads_unsharded_peak = unsharded_grad_bytes_.peak;
  return b;
}

}  // namespace shardbench::shard
