#include "suites/engine_setup.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "engine/optim/param_groups.h"

namespace shardbench {

train::TrainerOptions TrainerOptionsFor(const Scenario& s) {
  train::TrainerOptions o;
  o.max_grad_norm = s.train.max_grad_norm;
  o.lr_schedule.kind = s.train.lr_schedule;
  o.lr_schedule.warmup_steps = s.train.lr_warmup_steps;
  o.lr_schedule.total_steps = s.total_steps();
  o.lr_schedule.min_lr_ratio = s.train.min_lr_ratio;
  return o;
}

Fingerprint FingerprintOf(const at::Tensor& t) {
  c10::NoGradGuard no_grad;
  at::Tensor d = t.detach().to(at::kDouble);
  return {d.sum().item<double>(), d.pow(2).sum().item<double>()};
}

shard::MixedPrecision MixedPrecisionFor(const Scenario& s) {
  shard::MixedPrecision mp;
  if (s.mixed_precision.param_dtype != "fp32") {
    mp.param_dtype = shard::ParseDtype(s.mixed_precision.param_dtype, "mixed_precision.param_dtype");
  }
  mp.reduce_dtype = shard::ParseDtype(s.mixed_precision.reduce_dtype, "mixed_precision.reduce_dtype");
  return mp;
}

EngineUnderTest::EngineUnderTest(const Scenario& s, model::LlamaForCausalLM& model, comm::Communicator* comm,
                                 const model::Materialization& materialize)
    : model_(model), comm_(comm), engine_name_(s.engine) {
  for (auto& p : model.named_parameters()) trainable_.push_back({p.name, p.slot->requires_grad()});
  // Checkpointing first, then sharding around it.
  for (auto& layer : model.model.layers) layer->set_checkpointing(s.activation_checkpointing);
  const auto& t = s.train;
  optim::AdamWOptions adamw;
  adamw.impl = optim::ParseAdamWImpl(s.optimizer.impl);
  if (s.optimizer.build == "before_wrap") {
    optimizer_ = std::make_unique<optim::AdamW>(optim::MakeParamGroups(model, t.lr, t.weight_decay, t.no_decay_on_norms), adamw);
  }
  if (s.engine == "flat") {
    shard::FlatShardingOptions o;
    o.policy = shard::ParseWrapPolicy(s.sharding.wrap_policy, s.sharding.min_params);
    o.use_orig_params = s.sharding.use_orig_params;
    o.reshard_after_forward = s.sharding.reshard_after_forward;
    o.mixed_precision = MixedPrecisionFor(s);
    o.materialize = materialize;
    o.forward_prefetch = s.sharding.forward_prefetch;
    o.backward_prefetch = s.sharding.backward_prefetch;
    flat_ = std::make_unique<shard::FlatShardedModel>(model, comm, o);
  } else if (s.engine == "per_param") {
    shard::PerParamShardingOptions o;
    o.policy = shard::ParseWrapPolicy(s.sharding.wrap_policy, s.sharding.min_params);
    o.reshard_after_forward = s.sharding.reshard_after_forward;
    o.mixed_precision = MixedPrecisionFor(s);
    o.materialize = materialize;
    o.forward_prefetch = s.sharding.forward_prefetch;
    o.backward_prefetch = s.sharding.backward_prefetch;
    per_param_ = std::make_unique<shard::PerParamShardedModel>(model, comm, o);
  } else {
    model::MaterializeParameters(model, materialize);
    all_reduce_ = std::make_unique<train::AllReduceGradients>(model, comm);
  }
  model::MaterializeBuffers(model, materialize.device);
  if (!optimizer_) {
    const auto params = flat_        ? flat_->named_parameters()
                        : per_param_ ? per_param_->named_parameters()
                                     : model.named_parameters();
    optimizer_ = std::make_unique<optim::AdamW>(optim::MakeParamGroups(params, t.lr, t.weight_decay, t.no_decay_on_norms), adamw);
  }
}

train::GradientSync* EngineUnderTest::sync() {
  if (flat_) return flat_.get();
  if (per_param_) return per_param_.get();
  return all_reduce_.get();
}

std::vector<std::pair<std::string, Fingerprint>> EngineUnderTest::fingerprints() {
  std::vector<std::pair<std::string, Fingerprint>> out;
  if (flat_ || per_param_) {
    std::map<std::string, Fingerprint> by_name;
    auto record = [&](const std::string& name, const at::Tensor& t) { by_name[name] = FingerprintOf(t); };
    if (flat_) flat_->for_each_full_param(record);
    if (per_param_) per_param_->for_each_full_param(record);
    for (const auto& [name, trainable] : trainable_) out.push_back({name, by_name.at(name)});
  } else {
    for (auto& p : model_.named_parameters()) out.push_back({p.name, FingerprintOf(*p.slot)});
  }
  return out;
}

EngineMemory EngineUnderTest::memory() const {
  EngineMemory m;
  m.optim_state = optimizer_->state_bytes();
  if (flat_ || per_param_) {
    const shard::ShardBytes b = flat_ ? flat_->bytes() : per_param_->bytes();
    m.params_sharded = b.params_sharded;
    m.params_unsharded = b.params_unsharded;
    m.params_unsharded_peak = b.params_unsharded_peak;
    m.grads = b.grads_sharded;
    m.grads_unsharded_peak = b.grads_unsharded_peak;
    m.params_by_dtype = b.params_sharded_by_dtype;
  } else {
    for (auto& p : model_.named_parameters()) {
      m.params_unsharded += p.slot->nbytes();
      m.params_by_dtype[p.slot->scalar_type()] += p.slot->nbytes();
      if (p.slot->grad().defined()) m.grads += p.slot->grad().nbytes();
    }
    m.params_unsharded_peak = m.params_unsharded;
  }
  return m;
}

checkpoint::StateDictTarget EngineUnderTest::state_dict_target() {
  return {&model_, flat_.get(), per_param_.get(), optimizer_.get(), comm_, engine_name_};
}

void EngineUnderTest::reset_peaks() {
  if (flat_) flat_->reset_peaks();
  if (per_param_) per_param_->reset_peaks();
}

}  // namespace shardbench
