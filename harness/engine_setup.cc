#include "harness/engine_setup.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "engine/optim/param_groups.h"
#include "harness/scenario/engine_registry.h"

namespace shardbench {

train::TrainerOptions TrainerOptionsFor(const Scenario& s) {
  train::TrainerOptions o;
  o.max_grad_norm = s.train.max_grad_norm;
  o.lr_schedule.kind = s.train.lr_schedule;
  o.lr_schedule.warmup_steps = s.train.lr_warmup_steps;
  o.lr_schedule.total_steps = s.total_steps();
  o.lr_schedule.min_lr_ratio = s.train.min_lr_ratio;
  o.hooks = train::FailpointHooks();  // a scenario's failpoints act inside its steps
  return o;
}

Fingerprint FingerprintOf(const at::Tensor& t) {
  c10::NoGradGuard no_grad;
  at::Tensor d = t.detach().to(at::kDouble);
  return {d.sum().item<double>(), d.pow(2).sum().item<double>()};
}

shard::MixedPrecision MixedPrecisionFor(const Scenario& s) {
  shard::MixedPrecision mp;
  // fp32 params: no cast (each parameter's own dtype); reduce_dtype is always explicit.
  if (s.mixed_precision.param_dtype != c10::ScalarType::Float) mp.param_dtype = s.mixed_precision.param_dtype;
  mp.reduce_dtype = s.mixed_precision.reduce_dtype;
  return mp;
}

shard::EngineOptions EngineOptionsFor(const Scenario& s, const model::Materialization& materialize) {
  shard::EngineOptions o;
  o.kind = EngineKindLike(s);
  o.policy = {s.sharding.wrap_policy, s.sharding.min_params};
  o.use_orig_params = s.sharding.use_orig_params;
  o.reshard_after_forward = s.sharding.reshard_after_forward;
  o.mixed_precision = MixedPrecisionFor(s);
  o.materialize = materialize;
  o.forward_prefetch = s.sharding.forward_prefetch;
  o.backward_prefetch = s.sharding.backward_prefetch;
  return o;
}

EngineUnderTest::EngineUnderTest(const Scenario& s, model::LlamaForCausalLM& model, comm::Communicator* comm,
                                 const model::Materialization& materialize)
    : comm_(comm) {
  for (auto& p : model.named_parameters()) trainable_.push_back({p.name, p.slot->requires_grad()});
  // Checkpointing first, then sharding around it.
  for (auto& layer : model.model.layers) layer->set_checkpointing(s.activation_checkpointing);
  const auto& t = s.train;
  optim::AdamWOptions adamw;
  adamw.impl = s.optimizer.impl;
  if (s.optimizer.build == OptimizerBuild::kBeforeWrap) {
    optimizer_ = std::make_unique<optim::AdamW>(optim::MakeParamGroups(model, t.lr, t.weight_decay, t.no_decay_on_norms), adamw);
  }
  engine_ = shard::MakeShardedModel(model, comm, EngineOptionsFor(s, materialize));
  model::MaterializeBuffers(model, materialize.device);
  if (!optimizer_) {
    optimizer_ = std::make_unique<optim::AdamW>(
        optim::MakeParamGroups(engine_->named_parameters(), t.lr, t.weight_decay, t.no_decay_on_norms), adamw);
  }
}

std::vector<std::pair<std::string, Fingerprint>> EngineUnderTest::fingerprints() {
  std::map<std::string, Fingerprint> by_name;
  engine_->for_each_full_param([&](const std::string& name, const at::Tensor& t) { by_name[name] = FingerprintOf(t); });
  std::vector<std::pair<std::string, Fingerprint>> out;
  for (const auto& [name, trainable] : trainable_) out.push_back({name, by_name.at(name)});
  return out;
}

memory::MemoryRecord EngineUnderTest::memory() const {
  memory::MemoryRecord m = engine_->memory();
  m.held[memory::Category::kOptimState] = optimizer_->state_bytes();
  return m;
}

checkpoint::StateDictTarget EngineUnderTest::state_dict_target() { return {engine_.get(), optimizer_.get(), comm_}; }

void EngineUnderTest::reset_peaks() { engine_->reset_peaks(); }

}  // namespace shardbench
