// One FSDP1 unit: its parameters flattened (one dtype, one device) into a 1-D buffer,
// right-padded to a multiple of world size; rank r keeps chunk r (possibly padding only).
//
// Runtime, per iteration:
//   forward:  unshard (all-gather into a new full buffer; params become views of it) ->
//             module forward -> reshard (free the buffer's storage) unless
//             reshard_after_forward=false or this is the root unit
//   backward: the unit's output gradient arrives -> unshard again into the same storage ->
//             module backward -> the full buffer's gradient is complete -> reduce-scatter it
//             (sum / world size) into this rank's shard gradient -> free the buffer.
// At world size 1 nothing is gathered: the shard is the full buffer (PyTorch's NO_SHARD).
// The all-gather and reduce-scatter are the forward and backward of one autograd Function
// (UnshardFunction in the .cc), so the shard is the autograd leaf and its .grad accumulates
// across micro-batches like any parameter's.
//
// use_orig_params=false: the unit exposes one parameter, `<path>._flat_param` (the shard), and
// refuses mixed requires_grad. use_orig_params=true: the original parameter objects stay
// registered and are, outside forward/backward, 1-D views of their slice of the local shard
// (empty if this rank holds none of them); params start 16-byte aligned in the buffer; mixed
// requires_grad is allowed and the gradient covers the whole buffer, frozen slots included
// (and is computed for frozen params too, as in PyTorch): the memory blowup reproduced exactly.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/shard/flat_layout.h"
#include "engine/shard/input_grad_countdown.h"
#include "engine/shard/unit_options.h"
#include "engine/shard/wrap_policy.h"

namespace shardbench::shard {

class FlatParamUnit;

struct FlatUnitOptions : UnitOptions<FlatParamUnit> {
  bool use_orig_params = true;  // PyTorch's default since 2.x for FSDP1 users of LoRA
};

struct FlatParamSlot {
  std::string name;   // original fully qualified name
  at::Tensor* slot;   // the module member holding it
  at::Tensor orig;    // the original parameter object (what an optimizer may hold)
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int64_t offset = 0;  // in the flat buffer
  bool requires_grad = false;
};

class FlatParamUnit {
 public:
  using Options = FlatUnitOptions;
  // `comm` may be null for a single rank. Throws InputError on mixed dtype/device, or mixed
  // requires_grad with use_orig_params=false.
  FlatParamUnit(UnitPlan plan, comm::Communicator* comm, FlatUnitOptions options);
  FlatParamUnit(const FlatParamUnit&) = delete;
  FlatParamUnit& operator=(const FlatParamUnit&) = delete;

  const std::string& path() const { return path_; }
  model::Module& module() const { return *module_; }
  const std::vector<FlatParamSlot>& params() const { return params_; }
  const FlatUnitOptions& options() const { return options_; }
  // "_flat_param" (root) or "<path>._flat_param".
  std::string flat_param_name() const;

  int64_t unpadded_numel() const { return unpadded_numel_; }  // params + alignment padding
  int64_t padded_numel() const { return shard_numel_ * world_size(); }
  int64_t shard_numel() const { return shard_numel_; }
  bool requires_grad() const { return requires_grad_; }
  const at::Tensor& flat_shard() const { return flat_shard_; }  // the leaf the optimizer steps
  // This rank's part of `p`: (start within the shard, length); length 0 if it holds none.
  std::pair<int64_t, int64_t> local_range(const FlatParamSlot& p) const {
    return layout_.local_range(p.offset, p.numel, rank());
  }
  int world_size() const { return comm_ ? comm_->world_size() : 1; }
  int rank() const { return comm_ ? comm_->rank() : 0; }

  // Runtime (called by the forward hooks and the engine).
  // Unshards for forward. A unit without trainable params has no gradient to reduce, so
  // nothing tells it its backward is over; like FSDP's post-backward "reshard only" hook, it
  // watches the gradients of its inputs and frees the re-gathered buffer once they are all in.
  void pre_forward(at::ArrayRef<at::Tensor> inputs);
  void unshard_for_backward();
  // Prefetch (FSDP1's forward_prefetch / BACKWARD_PRE): start the all-gather this unit will
  // need next, asynchronously, so it overlaps whatever runs meanwhile; the unit completes it
  // when it is used. No-op at world size 1, when gathered already or when one is in flight.
  void prefetch_for_forward();
  void prefetch_for_backward();  // only if resharded after forward with its backward to come
  // Activation checkpointing re-runs the module in backward (grad mode on): the original
  // params become views of the re-gathered buffer again, connected to its autograd node.
  void prepare_recompute();
  void reshard();
  at::Tensor post_forward(at::Tensor output);
  // After backward: make sure nothing is left unsharded, and (use_orig_params) point each
  // trainable original parameter's .grad at its slice of the shard gradient.
  void finish_backward();
  // Clears the shard gradient (and the original params' grads).
  void zero_grad();

  // Collective: every rank calls it. Full, unpadded tensors with original names and shapes.
  std::vector<std::pair<std::string, at::Tensor>> gather_full_params() const;

  // Bytes this rank holds right now (exact, from the tensors).
  int64_t sharded_param_bytes() const { return flat_shard_.nbytes(); }
  c10::ScalarType param_dtype() const { return flat_shard_.scalar_type(); }  // stored
  std::map<c10::ScalarType, int64_t> sharded_param_bytes_by_dtype() const {
    return {{param_dtype(), sharded_param_bytes()}};
  }
  int64_t unsharded_param_bytes() const;
  int64_t sharded_grad_bytes() const;

  // Used by the autograd Function (implementation detail, public for it).
  at::Tensor gather_new_full();
  at::Tensor reduce_scatter_grad(const at::Tensor& full_grad);
  void after_backward_reduce();

 private:
  void unshard_for_forward();
  void gather_into(const at::Tensor& full) const;
  void use_unsharded_views();
  void use_sharded_views();
  void free_full_storage();
  void finish_pending_gather();  // waits for a prefetched all-gather (if any) to land
  void start_gather(const at::Tensor& full, bool for_backward);
  at::ScalarType gather_dtype() const { return options_.mixed_precision.gather(flat_shard_.scalar_type()); }
  int64_t full_bytes() const { return padded_numel() * static_cast<int64_t>(c10::elementSize(gather_dtype())); }
  // This rank's slice of `p` within a shard-sized tensor (the shard or its gradient), 1-D.
  at::Tensor local_slice(const at::Tensor& shard_sized, const FlatParamSlot& p) const;

  std::string path_;
  model::Module* module_;
  comm::Communicator* comm_;
  FlatUnitOptions options_;
  std::vector<FlatParamSlot> params_;
  FlatLayout layout_;
  int64_t unpadded_numel_ = 0, shard_numel_ = 0;
  bool requires_grad_ = false;
  at::Tensor flat_shard_;  // [shard_numel], leaf
  at::Tensor full_;        // [padded_numel], output of the unshard Function; storage freed when sharded
  bool unsharded_ = false;
  bool needs_backward_unshard_ = false;  // resharded after forward, backward still to come
  InputGradCountdown input_grads_;       // frozen units: when their backward is over
  struct PendingGather {
    at::Tensor full, shard;  // the buffer being written, the (cast) shard being sent
    comm::WorkHandle work;
    bool for_backward = false;
  };
  std::optional<PendingGather> pending_;  // a prefetched all-gather in flight
};

}  // namespace shardbench::shard
