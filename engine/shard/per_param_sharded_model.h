// FSDP2 (fully_shard) over a whole model: the wrap policy's units, each a PerParamUnit, with
// the forward hooks that gather and free them. Implements GradientSync: after backward every
// unit's post-backward has run (the ones whose inputs need no gradient, such as the first
// layer of a LoRA model and the root, run here), so nothing is left unsharded.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/shard/byte_gauge.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/shard/execution_order.h"
#include "engine/shard/per_param_unit.h"
#include "engine/shard/wrap_policy.h"
#include "engine/train/gradient_sync.h"

namespace shardbench::shard {

struct PerParamShardingOptions {
  WrapPolicy policy;
  bool reshard_after_forward = true;
  MixedPrecision mixed_precision;
  model::Materialization materialize;  // meta-device init: each rank fills only its elements
  // Explicit prefetch (FSDP2's set_modules_to_forward/backward_prefetch with the next unit in
  // execution order, recorded during the first forward): start the next unit's all-gather
  // while the current one computes. Costs one more unit's unsharded params at a time.
  bool forward_prefetch = false;
  bool backward_prefetch = false;
};

class PerParamShardedModel : public model::ForwardHooks, public train::GradientSync {
 public:
  // The model must be fully materialised on its device. `comm` may be null (one rank).
  PerParamShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm, PerParamShardingOptions options);
  ~PerParamShardedModel() override;

  // Original names, sharded parameters (new tensors: build optimizers from these).
  std::vector<model::NamedTensor> named_parameters();

  void pre_forward(model::Module& module, at::ArrayRef<at::Tensor> inputs) override;
  at::Tensor post_forward(model::Module& module, at::Tensor output) override;
  void before_recompute(model::Module& module) override;
  void zero_grad() override;
  void after_backward() override;
  std::vector<at::Tensor> local_grads() override;
  bool grads_sharded() const override { return true; }

  // Collective: calls `fn(name, full tensor)` for every parameter, one unit at a time.
  void for_each_full_param(const std::function<void(const std::string&, const at::Tensor&)>& fn);
  std::vector<std::pair<std::string, at::Tensor>> gather_full_params();
  ShardBytes bytes() const;
  void reset_peaks() {
    unsharded_bytes_.reset_peak();
    unsharded_grad_bytes_.reset_peak();
  }
  const std::vector<std::unique_ptr<PerParamUnit>>& units() const { return units_; }

 private:
  model::LlamaForCausalLM& model_;
  PerParamShardingOptions options_;
  ExecutionOrder<PerParamUnit> order_;  // for prefetch
  std::vector<std::unique_ptr<PerParamUnit>> units_;
  std::map<model::Module*, PerParamUnit*> by_module_;
  ByteGauge unsharded_bytes_;
  ByteGauge unsharded_grad_bytes_;
};

}  // namespace shardbench::shard
