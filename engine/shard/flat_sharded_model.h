// FSDP1 over a whole model: applies a wrap policy, builds one FlatParamUnit per unit, and
// installs the forward hooks that unshard/reshard them. Implements GradientSync: after
// backward it finishes every unit (nothing left unsharded; original params' grads published).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/shard/execution_order.h"
#include "engine/shard/flat_param_unit.h"
#include "engine/shard/wrap_policy.h"
#include "engine/train/gradient_sync.h"

namespace shardbench::shard {

struct FlatShardingOptions {
  WrapPolicy policy;
  bool use_orig_params = true;
  bool reshard_after_forward = true;
  MixedPrecision mixed_precision;
  model::Materialization materialize;  // meta-device init: each rank fills only its elements
  // FSDP1's forward_prefetch / backward_prefetch=BACKWARD_PRE: all-gather the next unit (in the
  // forward order recorded on the first iteration, reversed in backward) while this one computes.
  bool forward_prefetch = false;
  bool backward_prefetch = false;
};

// Bytes this rank holds, exact (DESIGN.md memory categories).
struct ShardBytes {
  int64_t params_sharded = 0;
  int64_t params_unsharded = 0;       // full buffers allocated right now
  int64_t params_unsharded_peak = 0;  // the most allocated at once since reset_peaks()
  int64_t grads_sharded = 0;
  int64_t grads_unsharded_peak = 0;   // largest full-buffer gradient alive at once (before its reduce-scatter)
  std::map<c10::ScalarType, int64_t> params_sharded_by_dtype;  // params_sharded split by stored dtype
};

class FlatShardedModel : public model::ForwardHooks, public train::GradientSync {
 public:
  // The model must be fully materialised on its device. `comm` may be null (one rank).
  FlatShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm, FlatShardingOptions options);
  ~FlatShardedModel() override;

  // What the wrapped model exposes as parameters: original names and objects
  // (use_orig_params=true; 1-D shard views outside forward) or one "<unit>._flat_param" per
  // unit. Build optimizers from this after wrapping.
  std::vector<model::NamedTensor> named_parameters();

  void pre_forward(model::Module& module, at::ArrayRef<at::Tensor> inputs) override;
  at::Tensor post_forward(model::Module& module, at::Tensor output) override;
  void before_recompute(model::Module& module) override;
  void zero_grad() override;
  void after_backward() override;
  // The shard gradients of trainable parameters only: with use_orig_params the original
  // parameters' gradient views (frozen slots of mixed units excluded, as in FSDP's
  // clip_grad_norm_ over module.parameters()); otherwise each unit's flat shard gradient.
  std::vector<at::Tensor> local_grads() override;
  bool grads_sharded() const override { return true; }

  // Collective: full parameters with original names, in the model's order.
  std::vector<std::pair<std::string, at::Tensor>> gather_full_params();
  ShardBytes bytes() const;
  void reset_peaks() {
    unsharded_bytes_.reset_peak();
    unsharded_grad_bytes_.reset_peak();
  }
  // Collective: calls `fn(name, full tensor)` for every parameter, one unit at a time, so at
  // most one unit is gathered at once.
  void for_each_full_param(const std::function<void(const std::string&, const at::Tensor&)>& fn);
  const std::vector<std::unique_ptr<FlatParamUnit>>& units() const { return units_; }

 private:
  model::LlamaForCausalLM& model_;
  FlatShardingOptions options_;
  std::vector<std::unique_ptr<FlatParamUnit>> units_;
  std::map<model::Module*, FlatParamUnit*> by_module_;
  ExecutionOrder<FlatParamUnit> order_;  // for prefetch
  ByteGauge unsharded_bytes_;
  ByteGauge unsharded_grad_bytes_;
};

}  // namespace shardbench::shard
