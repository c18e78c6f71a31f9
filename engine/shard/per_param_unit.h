// One FSDP2 unit (torch's FSDPParamGroup): the parameters of one module, each sharded on its
// own along dim 0 (engine/shard/dim0_layout.h), keeping its own name and shape.
//
// Runtime, per iteration:
//   forward:  all-gather: every param's padded local rows are copied into one buffer (copy-in),
//             one all-gather, then each param's rows are copied out into its own contiguous
//             unsharded tensor (copy-out) -> module forward -> free the unsharded storage
//             unless reshard_after_forward=false or this is the root
//   backward: the output's gradient arrives -> all-gather again into the same storage ->
//             module backward; each trainable param's full gradient is kept until the unit's
//             backward is over (all its inputs have their gradients, FSDP2's post-backward) ->
//             one reduce-scatter of all of them through one padded buffer (sum / world size)
//             into the rank's sharded gradients -> free the unsharded storage.
// Frozen params are gathered but never reduce-scattered and get no gradient memory at all:
// unlike a flat unit, mixing frozen and trainable params costs nothing extra.
//
// Between iterations each module slot holds the sharded parameter: a leaf of shape
// [local rows, ...] (the real rows only; its storage is padded to rows_per_rank), which is what
// the optimizer holds. It is a new tensor, as FSDP2's DTensor parameters are: an optimizer
// built before wrapping holds the old, orphaned ones.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/shard/dim0_layout.h"
#include "engine/shard/input_grad_countdown.h"
#include "engine/shard/per_param_gather.h"
#include "engine/shard/unit_options.h"
#include "engine/shard/wrap_policy.h"

namespace shardbench::shard {

class PerParamUnit;

using PerParamUnitOptions = UnitOptions<PerParamUnit>;

struct ShardedParam {
  std::string name;
  at::Tensor* slot = nullptr;  // the module member
  std::vector<int64_t> shape;  // global
  Dim0Layout layout;
  bool requires_grad = false;
  at::Tensor padded;     // [rows_per_rank, ...]: this rank's storage
  at::Tensor sharded;    // padded's real rows, a leaf: what the optimizer steps
  at::Tensor unsharded;  // [shape], contiguous; its storage exists only while unsharded
  int64_t reduce_offset = -1;  // in the per-rank reduce-scatter segment (trainable only)
  at::Tensor pending_grad;     // full gradient of this backward, until the reduce-scatter
};

class PerParamUnit {
 public:
  using Options = PerParamUnitOptions;
  // InputError if the unit mixes devices, or its trainable params would reduce in different
  // dtypes (FSDP2: "FSDP expects uniform original parameter dtype"). Frozen params may have any
  // dtype: a unit of mixed gather dtypes all-gathers bytes (engine/shard/per_param_gather.h).
  PerParamUnit(UnitPlan plan, comm::Communicator* comm, PerParamUnitOptions options);
  PerParamUnit(const PerParamUnit&) = delete;
  PerParamUnit& operator=(const PerParamUnit&) = delete;

  const std::string& path() const { return path_; }
  model::Module& module() const { return *module_; }
  std::vector<ShardedParam>& params() { return params_; }
  const std::vector<ShardedParam>& params() const { return params_; }
  int world_size() const { return comm_ ? comm_->world_size() : 1; }
  int rank() const { return comm_ ? comm_->rank() : 0; }
  int64_t reduce_numel() const { return reduce_numel_; }  // per rank, trainable params only

  // Forward hooks.
  void pre_forward(at::ArrayRef<at::Tensor> inputs);
  at::Tensor post_forward(at::Tensor output);
  // End of backward for this unit (FSDP2's post-backward; also called for every unit once
  // backward is over): reduce-scatter the gradients it collected, free the unsharded params.
  void finish_backward();
  void zero_grad();

  // Collective: full tensors with original names (outside forward/backward).
  std::vector<std::pair<std::string, at::Tensor>> gather_full_params();

  int64_t sharded_param_bytes() const;
  std::map<c10::ScalarType, int64_t> sharded_param_bytes_by_dtype() const;
  int64_t unsharded_param_bytes() const;
  int64_t sharded_grad_bytes() const;

  // Called by the autograd functions: an unsharded param's gradient; the unit's backward begins.
  void accept_grad(size_t index, const at::Tensor& grad);
  void unshard_for_backward();
  // Prefetch: start this unit's all-gather now (asynchronously, overlapping whatever runs
  // next); the copy-out happens when the unit is used. No-op when already gathered or pending.
  void prefetch_for_forward();
  void prefetch_for_backward();  // only if the unit was resharded after forward
  // Activation checkpointing re-runs the module in backward (grad mode on): the module's slots
  // become the gathered params again, connected to autograd so their gradients reach us.
  void prepare_recompute();

 private:
  void unshard();          // all-gather into the unsharded storages (completes a prefetch)
  void start_unshard(bool async);
  void finish_pending_gather();
  void use_unsharded();    // module slots -> unsharded params (autograd-connected when trainable)
  void use_sharded();      // module slots -> sharded params
  void free_unsharded();
  void reduce_scatter_grads();
  int64_t full_bytes() const;  // every param unsharded
  std::vector<at::Tensor> padded_shards() const;

  std::string path_;
  model::Module* module_;
  comm::Communicator* comm_;
  PerParamUnitOptions options_;
  std::vector<ShardedParam> params_;
  GatherPlan gather_plan_;             // the forward/backward all-gather (gather dtypes)
  at::TensorOptions reduce_options_;  // device and dtype of the reduce-scatter
  int64_t reduce_numel_ = 0;
  bool unsharded_ = false;
  bool needs_backward_unshard_ = false;
  bool has_pending_grads_ = false;
  InputGradCountdown input_grads_;  // when this unit's backward is over
  std::vector<at::Tensor> grad_buffers_;  // reduce-scatter outputs the sharded grads view
  struct PendingGather {
    at::Tensor in, out;
    comm::WorkHandle work;
    std::vector<at::Tensor> dst;
  };
  std::optional<PendingGather> pending_gather_;  // a prefetched all-gather in flight
};

}  // namespace shardbench::shard
