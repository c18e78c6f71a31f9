#include "engine/shard/flat_param_unit.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "engine/common/error.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/profile/span_recorder.h"
#include "engine/shard/flat_layout.h"
#include "engine/shard/storage.h"

namespace shardbench::shard {
namespace {

// An alias of `t`'s memory with its own TensorImpl: writing through it neither records
// autograd history nor bumps the version counter that tensors saved for backward check
// (the re-gathered data is the same data they saved).
at::Tensor RawAlias(const at::Tensor& t) {
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().requires_grad(false));
}

// Forward: all-gather the shard into a new full buffer. Backward: reduce-scatter the full
// buffer's gradient into a shard gradient (the leaf's AccumulateGrad adds it up).
struct UnshardFunction : public torch::autograd::Function<UnshardFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& shard, int64_t unit) {
    ctx->saved_data["unit"] = unit;
    return reinterpret_cast<FlatParamUnit*>(unit)->gather_new_full();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* unit = reinterpret_cast<FlatParamUnit*>(ctx->saved_data["unit"].toInt());
    at::Tensor shard_grad = unit->reduce_scatter_grad(grads[0]);
    unit->after_backward_reduce();
    return {shard_grad, at::Tensor()};
  }
};

std::string Examples(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 3; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 3) s += ", ...";
  return std::to_string(names.size()) + " (" + s + ")";
}

}  // namespace

FlatParamUnit::FlatParamUnit(UnitPlan plan, comm::Communicator* comm, FlatUnitOptions options)
    : path_(std::move(plan.path)), module_(plan.module), comm_(comm), options_(options) {
  const std::string unit_name = path_.empty() ? "<root>" : path_;
  std::vector<std::string> frozen, trainable;
  for (const auto& p : plan.params) {
    const at::Tensor& t = *p.slot;
    const at::Tensor& first = *plan.params.front().slot;
    if (t.scalar_type() != first.scalar_type()) {  // FSDP1's own refusal, then what to do about it
      throw InputError("Must flatten tensors with uniform dtype but got " + std::string(c10::toString(first.scalar_type())) +
                       " and " + c10::toString(t.scalar_type()) + " (unit '" + unit_name + "': '" +
                       plan.params.front().name + "' and '" + p.name +
                       "'). A flat parameter holds one dtype: put params of other dtypes in units of their own "
                       "(wrap_policy=lora_separate for fp32 adapters over a bf16 base), store them alike "
                       "(model_dtype, upcast=all), or use engine=per_param.");
    }
    if (t.device() != first.device()) {
      throw InputError("unit '" + unit_name + "': cannot flatten '" + plan.params.front().name + "' (on " +
                       first.device().str() + ") with '" + p.name + "' (on " + t.device().str() +
                       "): a flat parameter lives on one device");
    }
    (t.requires_grad() ? trainable : frozen).push_back(p.name);
  }
  if (!options_.use_orig_params && !frozen.empty() && !trainable.empty()) {
    throw InputError("Must flatten tensors with uniform requires_grad when use_orig_params=False (unit '" + unit_name +
                     "': frozen " + Examples(frozen) + "; trainable " + Examples(trainable) +
                     "). Use use_orig_params=true or a wrap policy that puts trainable params in their own units "
                     "(lora_separate).");
  }
  requires_grad_ = !trainable.empty();

  // Layout: with use_orig_params every param starts 16-byte aligned (as FSDP does), so the
  // alignment padding is part of the flat numel and of the gradient.
  const at::TensorOptions opts = plan.params.empty() ? at::TensorOptions().dtype(at::kFloat)
                                                     : plan.params.front().slot->options().requires_grad(false);
  const int64_t elem = static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(opts.dtype())));
  std::vector<int64_t> numels;
  for (const auto& p : plan.params) numels.push_back(p.slot->numel());
  layout_ = ComputeFlatLayout(numels, elem, options_.use_orig_params, world_size());
  const FlatLayout& layout = layout_;
  for (size_t i = 0; i < plan.params.size(); ++i) {
    const auto& p = plan.params[i];
    FlatParamSlot s;
    s.name = p.name;
    s.slot = p.slot;
    s.orig = *p.slot;
    s.shape = p.slot->sizes().vec();
    s.numel = p.slot->numel();
    s.offset = layout.offsets[i];
    s.requires_grad = p.slot->requires_grad();
    params_.push_back(s);
  }
  unpadded_numel_ = layout.unpadded_numel;
  shard_numel_ = layout.shard_numel;

  c10::NoGradGuard no_grad;
  const bool meta = !params_.empty() && params_.front().slot->is_meta();
  if (meta) {
    // Meta-device init: allocate only this rank's chunk and fill just its elements.
    if (!options_.materialize.fill) throw InfraError("unit '" + unit_name + "': meta parameters and nothing to materialise them");
    const at::TensorOptions on_device = opts.device(options_.materialize.device);
    {
      memory::ScopedCategory sharded(memory::Category::kParamsSharded);
      flat_shard_ = at::zeros({shard_numel_}, on_device);
    }
    const int64_t chunk_start = rank() * shard_numel_;
    for (auto& p : params_) {
      const auto [start, length] = layout_.local_range(p.offset, p.numel, rank());
      if (length > 0) options_.materialize.fill(p.name, flat_shard_.narrow(0, start, length), chunk_start + start - p.offset);
      // The meta tensor cannot take real data: a fresh original parameter (optimizers are built
      // after wrapping with meta init).
      p.orig = at::empty({0}, on_device).requires_grad_(p.requires_grad);
      *p.slot = p.orig;
    }
    flat_shard_.requires_grad_(requires_grad_);
  } else {
    // Flatten (every rank holds the fully materialised model here) and keep this rank's chunk.
    at::Tensor full;
    {
      memory::ScopedCategory unsharded(memory::Category::kParamsUnsharded);
      full = at::zeros({padded_numel()}, opts);
    }
    for (const auto& p : params_) full.narrow(0, p.offset, p.numel).copy_(p.slot->detach().reshape({-1}));
    memory::ScopedCategory sharded(memory::Category::kParamsSharded);
    flat_shard_ = full.narrow(0, rank() * shard_numel_, shard_numel_).clone().requires_grad_(requires_grad_);
  }
  use_sharded_views();
}

std::string FlatParamUnit::flat_param_name() const {
  return path_.empty() ? "_flat_param" : path_ + "._flat_param";
}

at::Tensor FlatParamUnit::local_slice(const at::Tensor& shard_sized, const FlatParamSlot& p) const {
  const auto [start, length] = layout_.local_range(p.offset, p.numel, rank());
  return shard_sized.narrow(0, start, length);
}

void FlatParamUnit::use_sharded_views() {
  for (auto& p : params_) {
    if (!options_.use_orig_params) {
      // The originals are no longer the module's parameters (PyTorch deletes them); an
      // optimizer that still holds them never sees a gradient.
      *p.slot = at::empty({0}, flat_shard_.options().requires_grad(false));
      continue;
    }
    p.orig.set_data(local_slice(flat_shard_.detach(), p));
    *p.slot = p.orig;
  }
}

void FlatParamUnit::use_unsharded_views() {
  // One split for all params (as FSDP does with flat_param.split): its backward concatenates
  // the params' gradients into one buffer. Separate narrow() views would each allocate and
  // zero a full-size gradient buffer in backward (a 1.6x slowdown measured on 125m).
  std::vector<int64_t> sizes;
  std::vector<size_t> index;
  int64_t at = 0;
  for (const auto& p : params_) {
    if (p.offset > at) sizes.push_back(p.offset - at);  // alignment padding
    index.push_back(sizes.size());
    sizes.push_back(p.numel);
    at = p.offset + p.numel;
  }
  if (full_.numel() > at) sizes.push_back(full_.numel() - at);  // right padding
  std::vector<at::Tensor> parts = at::split_with_sizes(full_, sizes);
  for (size_t i = 0; i < params_.size(); ++i) *params_[i].slot = parts[index[i]].view(params_[i].shape);
}

void FlatParamUnit::gather_into(const at::Tensor& full) const {
  c10::NoGradGuard no_grad;
  at::Tensor dst = RawAlias(full);
  // Mixed precision: the shard is cast to the gather dtype before it travels (FSDP casts first).
  const at::Tensor shard = flat_shard_.detach().to(full.scalar_type());
  if (world_size() > 1) {
    comm_->all_gather(dst, shard);
  } else {
    dst.copy_(shard);
  }
}

at::Tensor FlatParamUnit::gather_new_full() {
  if (pending_ && !pending_->for_backward) {  // prefetched: only wait for it
    at::Tensor full = pending_->full;
    finish_pending_gather();
    return full;
  }
  at::Tensor full;
  {
    memory::ScopedCategory unsharded(memory::Category::kParamsUnsharded);
    full = at::empty({padded_numel()}, flat_shard_.options().dtype(gather_dtype()).requires_grad(false));
  }
  if (options_.unsharded_bytes) options_.unsharded_bytes->add(full_bytes());
  gather_into(full);
  return full;
}

void FlatParamUnit::start_gather(const at::Tensor& full, bool for_backward) {
  c10::NoGradGuard no_grad;
  PendingGather g;
  g.full = full;
  g.shard = flat_shard_.detach().to(full.scalar_type());  // a cast copy under mixed precision
  g.work = comm_->all_gather_async(RawAlias(full), g.shard);
  g.for_backward = for_backward;
  pending_ = std::move(g);
}

void FlatParamUnit::finish_pending_gather() {
  if (!pending_) return;
  PendingGather g = std::move(*pending_);
  pending_.reset();
  g.work->wait();
}

void FlatParamUnit::prefetch_for_forward() {
  if (unsharded_ || pending_ || needs_backward_unshard_ || params_.empty() || world_size() == 1) return;
  at::Tensor full;
  {
    memory::ScopedCategory unsharded(memory::Category::kParamsUnsharded);
    full = at::empty({padded_numel()}, flat_shard_.options().dtype(gather_dtype()).requires_grad(false));
  }
  if (options_.unsharded_bytes) options_.unsharded_bytes->add(full_bytes());
  start_gather(full, /*for_backward=*/false);
}

void FlatParamUnit::prefetch_for_backward() {
  if (!needs_backward_unshard_ || pending_ || unsharded_) return;
  {
    memory::ScopedCategory unsharded(memory::Category::kParamsUnsharded);
    AllocStorage(full_, static_cast<size_t>(full_bytes()));
  }
  if (options_.unsharded_bytes) options_.unsharded_bytes->add(full_bytes());
  start_gather(full_, /*for_backward=*/true);
}

void FlatParamUnit::unshard_for_forward() {
  if (params_.empty()) return;
  if (unsharded_) {
    // Still gathered: the root, or a frozen unit whose inputs need no gradient, which learns
    // that backward is over only when the step ends, so the next micro-batch finds it gathered
    // by the last one's backward while its parameters show the shards post_forward left.
    use_unsharded_views();
    return;
  }
  // The shard gradient is cleared by zero_grad() at the start of a step (the trainer calls it),
  // not here: micro-batches of one step must accumulate into it.
  if (world_size() == 1) {
    // One rank: nothing to gather. Like PyTorch (which switches to NO_SHARD at world size 1),
    // the shard itself is the full buffer and gradients accumulate straight into it (through a
    // differentiable cast under mixed precision).
    full_ = gather_dtype() == flat_shard_.scalar_type() ? flat_shard_ : flat_shard_.to(gather_dtype());
  } else {
    full_ = UnshardFunction::apply(flat_shard_, reinterpret_cast<int64_t>(this));  // counts its bytes
  }
  unsharded_ = true;
  needs_backward_unshard_ = false;
  use_unsharded_views();
}

void FlatParamUnit::pre_forward(at::ArrayRef<at::Tensor> inputs) {
  unshard_for_forward();
  if (requires_grad_ || params_.empty() || world_size() == 1) return;
  input_grads_.arm(inputs, [this] { after_backward_reduce(); });
}

at::Tensor FlatParamUnit::post_forward(at::Tensor output) {
  if (params_.empty() || world_size() == 1) return output;  // one rank: never resharded until backward ends
  const bool backward_comes = output.requires_grad();
  if (options_.reshard_after_forward && !options_.is_root) {
    if (backward_comes) {
      free_full_storage();  // tensors saved for backward keep the (now empty) storage
      unsharded_ = false;
      needs_backward_unshard_ = true;
      use_sharded_views();
    } else {
      reshard();
    }
  }
  if (backward_comes) output.register_hook([this](const at::TensorBase&) { unshard_for_backward(); });
  return output;
}

void FlatParamUnit::unshard_for_backward() {
  if (!needs_backward_unshard_) return;
  profile::ScopedSpan span("unshard", "unshard", UnitLabel(path_));
  if (pending_ && pending_->for_backward) {
    finish_pending_gather();  // prefetched into full_'s storage
  } else {
    {
      memory::ScopedCategory unsharded(memory::Category::kParamsUnsharded);
      AllocStorage(full_, static_cast<size_t>(full_bytes()));
    }
    if (options_.unsharded_bytes) options_.unsharded_bytes->add(full_bytes());
    gather_into(full_);
  }
  needs_backward_unshard_ = false;
  unsharded_ = true;
  if (options_.after_backward_unshard) options_.after_backward_unshard(*this);
}

void FlatParamUnit::prepare_recompute() {
  if (params_.empty()) return;
  if (!unsharded_) unshard_for_forward();  // a unit whose output hook did not run yet
  use_unsharded_views();
}

at::Tensor FlatParamUnit::reduce_scatter_grad(const at::Tensor& full_grad) {
  profile::ScopedSpan span("reduce_scatter", "reduce_scatter", UnitLabel(path_));
  c10::NoGradGuard no_grad;
  // Mixed precision: gradients are reduced in reduce_dtype, then kept in the shard's dtype.
  at::Tensor g = full_grad.to(options_.mixed_precision.reduce(flat_shard_.scalar_type())).contiguous();
  if (world_size() == 1) return g.to(flat_shard_.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
  // The unsharded gradient exists from here until the reduce-scatter has consumed it.
  if (options_.unsharded_grad_bytes) options_.unsharded_grad_bytes->add(g.nbytes());
  memory::ScopedCategory grads(memory::Category::kGrads);
  at::Tensor shard_grad = at::empty({shard_numel_}, g.options());
  comm_->reduce_scatter(shard_grad, g);
  if (options_.unsharded_grad_bytes) options_.unsharded_grad_bytes->sub(g.nbytes());
  return shard_grad.div_(world_size()).to(flat_shard_.scalar_type());
}

void FlatParamUnit::free_full_storage() {
  profile::ScopedSpan span("reshard", "reshard", UnitLabel(path_));
  if (pending_) {  // never free storage a collective still writes; an unused prefetch is dropped
    const bool into_full = pending_->for_backward;
    finish_pending_gather();
    if (!into_full && options_.unsharded_bytes) options_.unsharded_bytes->sub(full_bytes());
  }
  if (!full_.defined() || !StorageAllocated(full_) || world_size() == 1) return;  // ws 1: full_ is the shard
  if (options_.unsharded_bytes) options_.unsharded_bytes->sub(full_bytes());
  FreeStorage(full_);
}

void FlatParamUnit::after_backward_reduce() {
  free_full_storage();
  full_ = at::Tensor();
  unsharded_ = false;
  needs_backward_unshard_ = false;
  use_sharded_views();
}

void FlatParamUnit::reshard() {
  if (!unsharded_ && !needs_backward_unshard_) return;
  after_backward_reduce();
}

void FlatParamUnit::finish_backward() {
  reshard();
  if (flat_shard_.grad().defined()) memory::Retag(flat_shard_.grad(), memory::Category::kGrads);  // ws 1: from autograd
  if (!options_.use_orig_params || !flat_shard_.grad().defined()) return;
  const at::Tensor g = flat_shard_.grad();
  for (auto& p : params_) {
    if (p.requires_grad) p.orig.mutable_grad() = local_slice(g, p);
  }
}

void FlatParamUnit::zero_grad() {
  if (flat_shard_.defined() && flat_shard_.grad().defined()) flat_shard_.mutable_grad() = at::Tensor();
  if (options_.use_orig_params) {
    for (auto& p : params_) {
      if (p.orig.grad().defined()) p.orig.mutable_grad() = at::Tensor();
    }
  }
}

std::vector<std::pair<std::string, at::Tensor>> FlatParamUnit::gather_full_params() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  if (params_.empty()) return out;
  at::Tensor full = at::empty({padded_numel()}, flat_shard_.options().requires_grad(false));
  gather_into(full);
  for (const auto& p : params_) out.push_back({p.name, full.narrow(0, p.offset, p.numel).view(p.shape).clone()});
  return out;
}

int64_t FlatParamUnit::unsharded_param_bytes() const {
  if (world_size() == 1) return 0;  // the full buffer is the shard
  return full_.defined() && StorageAllocated(full_) ? static_cast<int64_t>(full_.storage().nbytes()) : 0;
}

int64_t FlatParamUnit::sharded_grad_bytes() const {
  return flat_shard_.defined() && flat_shard_.grad().defined() ? flat_shard_.grad().nbytes() : 0;
}

}  // namespace shardbench::shard
