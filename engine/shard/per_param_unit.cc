#include "engine/shard/per_param_unit.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "engine/common/error.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/profile/span_recorder.h"
#include "engine/shard/storage.h"

namespace shardbench::shard {
namespace {

// An alias with its own TensorImpl and version counter: refilling the unsharded storage for
// backward through it does not trip autograd's check on tensors it saved.
at::Tensor RawAlias(const at::Tensor& t) {
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().requires_grad(false));
}

std::vector<int64_t> PaddedShape(const std::vector<int64_t>& shape, const Dim0Layout& l) {
  std::vector<int64_t> s{l.rows_per_rank};
  for (size_t i = 1; i < shape.size(); ++i) s.push_back(shape[i]);
  return s;
}

// Connects an unsharded parameter to its sharded leaf: forward hands out the gathered tensor,
// backward gives its full gradient to the unit (which reduce-scatters a unit at a time) and
// nothing to the leaf directly (the unit sets the leaf's .grad from the reduce-scatter).
struct GatheredParam : public torch::autograd::Function<GatheredParam> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& sharded, int64_t unit,
                            int64_t index) {
    ctx->saved_data["unit"] = unit;
    ctx->saved_data["index"] = index;
    return reinterpret_cast<PerParamUnit*>(unit)->params()[static_cast<size_t>(index)].unsharded.detach();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* unit = reinterpret_cast<PerParamUnit*>(ctx->saved_data["unit"].toInt());
    unit->accept_grad(static_cast<size_t>(ctx->saved_data["index"].toInt()), grads[0]);
    return {at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Identity in forward; in backward, re-gathers the unit before its backward starts. Being a
// node of its own (rather than a hook on the output) puts the next unit's post-backward hook,
// registered on this node's output, ahead of it: the later unit frees its parameters before
// this one gathers again, as FSDP2's RegisterPostBackwardFunction orders them, so only one
// layer is unsharded at a time in backward.
struct UnshardBeforeBackward : public torch::autograd::Function<UnshardBeforeBackward> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& output, int64_t unit) {
    ctx->saved_data["unit"] = unit;
    return output.view_as(output);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    reinterpret_cast<PerParamUnit*>(ctx->saved_data["unit"].toInt())->unshard_for_backward();
    return {grads[0], at::Tensor()};
  }
};

}  // namespace

PerParamUnit::PerParamUnit(UnitPlan plan, comm::Communicator* comm, PerParamUnitOptions options)
    : path_(std::move(plan.path)), module_(plan.module), comm_(comm), options_(options) {
  const std::string unit_name = path_.empty() ? "<root>" : path_;
  c10::NoGradGuard no_grad;
  std::vector<Dim0Layout> layouts;
  std::vector<at::ScalarType> gather_dtypes;
  const model::NamedTensor* first_trainable = nullptr;
  for (const auto& np : plan.params) {
    const at::Tensor& t = *np.slot;
    const at::Tensor& first = *plan.params.front().slot;
    if (t.device() != first.device()) {
      throw InputError("unit '" + unit_name + "': '" + np.name + "' is on " + t.device().str() + ", '" +
                       plan.params.front().name + "' on " + first.device().str() + ": one unit lives on one device");
    }
    ShardedParam p;
    p.name = np.name;
    p.slot = np.slot;
    p.shape = t.sizes().vec();
    p.layout = ComputeDim0Layout(p.shape, world_size());
    p.requires_grad = t.requires_grad();
    // Meta-device init: the shard is allocated on the real device and only its rows are filled.
    const bool meta = t.is_meta();
    if (meta && !options_.materialize.fill) throw InfraError("unit '" + unit_name + "': '" + np.name + "' is on the meta device and nothing materialises it");
    const at::TensorOptions opts = t.options().requires_grad(false).device(meta ? options_.materialize.device : t.device());
    if (p.requires_grad) {
      // One reduce-scatter per unit, in one dtype: trainable params must agree (frozen ones
      // never travel in it).
      const at::ScalarType reduce = options_.mixed_precision.reduce(t.scalar_type());
      if (first_trainable && reduce != reduce_options_.dtype().toScalarType()) {
        throw InputError("unit '" + unit_name + "': FSDP expects uniform original parameter dtype among trainable "
                         "params, but '" + np.name + "' is " + c10::toString(t.scalar_type()) + " and '" +
                         first_trainable->name + "' is " + c10::toString(first_trainable->slot->scalar_type()));
      }
      if (!first_trainable) first_trainable = &np;
      reduce_options_ = opts.dtype(reduce);
      p.reduce_offset = reduce_numel_;
      reduce_numel_ += p.layout.padded_numel();
    }
    const int64_t n = p.layout.local_rows(rank());
    {
      memory::ScopedCategory sharded(memory::Category::kParamsSharded);
      p.padded = at::empty(PaddedShape(p.shape, p.layout), opts);
    }
    // The rank's rows, then zeros in the padding rows only: writing the whole shard twice cost
    // a pass over memory at every init (most of a 1b model's shard is its rows).
    const at::Tensor flat = p.padded.view({-1});
    const int64_t filled = n * p.layout.row_numel;
    if (meta) {
      options_.materialize.fill(p.name, flat.narrow(0, 0, filled), p.layout.first_row(rank()) * p.layout.row_numel);
    } else if (n > 0) {
      p.padded.view({p.layout.rows_per_rank, p.layout.row_numel})
          .narrow(0, 0, n)
          .copy_(t.detach().reshape({p.layout.rows, p.layout.row_numel}).narrow(0, p.layout.first_row(rank()), n));
    }
    flat.narrow(0, filled, flat.numel() - filled).zero_();
    p.sharded = p.padded.narrow(0, 0, n).detach().requires_grad_(p.requires_grad);
    // Mixed precision gathers (and computes) every param in param_dtype; otherwise each keeps its own.
    const at::ScalarType gather = options_.mixed_precision.gather(t.scalar_type());
    {
      memory::ScopedCategory unsharded(memory::Category::kParamsUnsharded);
      p.unsharded = at::empty(p.shape, opts.dtype(gather));
    }
    FreeStorage(p.unsharded);
    layouts.push_back(p.layout);
    gather_dtypes.push_back(gather);
    params_.push_back(std::move(p));
  }
  gather_plan_ = PlanGather(std::move(layouts), std::move(gather_dtypes));
  use_sharded();
}

void PerParamUnit::use_sharded() {
  for (auto& p : params_) *p.slot = p.sharded;
}

void PerParamUnit::use_unsharded() {
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    *p.slot = p.requires_grad ? GatheredParam::apply(p.sharded, reinterpret_cast<int64_t>(this), static_cast<int64_t>(i))
                              : p.unsharded;
  }
}

std::vector<at::Tensor> PerParamUnit::padded_shards() const {
  std::vector<at::Tensor> out;
  for (const auto& p : params_) out.push_back(p.padded);
  return out;
}

void PerParamUnit::unshard() {
  if (pending_gather_) {
    finish_pending_gather();
    return;
  }
  start_unshard(/*async=*/false);
}

void PerParamUnit::start_unshard(bool async) {
  if (unsharded_ || pending_gather_ || params_.empty()) return;
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> dst;
  {
    memory::ScopedCategory unsharded(memory::Category::kParamsUnsharded);
    for (auto& p : params_) {
      AllocStorage(p.unsharded, p.unsharded.numel() * p.unsharded.element_size());
      dst.push_back(RawAlias(p.unsharded));
    }
  }
  if (options_.unsharded_bytes) options_.unsharded_bytes->add(full_bytes());
  unsharded_ = true;
  if (!async || world_size() == 1) {
    GatherInto(gather_plan_, padded_shards(), dst, comm_);
    return;
  }
  PendingGather g;
  g.in = CopyIn(gather_plan_, padded_shards());
  {
    memory::ScopedCategory buffers(memory::Category::kCommBuffers);
    g.out = at::empty({gather_plan_.segment_numel * world_size()}, g.in.options());
  }
  g.work = comm_->all_gather_async(g.out, g.in);
  g.dst = std::move(dst);
  pending_gather_ = std::move(g);
}

void PerParamUnit::finish_pending_gather() {
  c10::NoGradGuard no_grad;
  PendingGather g = std::move(*pending_gather_);
  pending_gather_.reset();
  g.work->wait();
  CopyOut(gather_plan_, g.dst, g.out, world_size());
}

void PerParamUnit::prefetch_for_forward() { start_unshard(/*async=*/true); }

void PerParamUnit::prefetch_for_backward() {
  if (needs_backward_unshard_) start_unshard(/*async=*/true);
}

void PerParamUnit::free_unsharded() {
  if (!pending_gather_ && !unsharded_) return;
  profile::ScopedSpan span("reshard", "reshard", UnitLabel(path_));
  if (pending_gather_) finish_pending_gather();  // never free storage a collective still writes
  if (!unsharded_) return;
  if (options_.unsharded_bytes) options_.unsharded_bytes->sub(full_bytes());
  for (auto& p : params_) FreeStorage(p.unsharded);
  unsharded_ = false;
}

void PerParamUnit::pre_forward(at::ArrayRef<at::Tensor> inputs) {
  if (params_.empty()) return;
  unshard();
  needs_backward_unshard_ = false;
  use_unsharded();
  // FSDP2's post-backward: once every input has its gradient, this unit's backward is over.
  input_grads_.arm(inputs, [this] { finish_backward(); });
}

at::Tensor PerParamUnit::post_forward(at::Tensor output) {
  if (params_.empty()) return output;
  const bool backward_comes = output.requires_grad();
  if (!backward_comes) {  // no backward: nothing needs the unsharded params any more
    if (!options_.is_root) {
      free_unsharded();
      use_sharded();
    }
    return output;
  }
  if (options_.reshard_after_forward && !options_.is_root) {
    free_unsharded();  // tensors autograd saved keep the (now empty) storages
    needs_backward_unshard_ = true;
    use_sharded();
  }
  return UnshardBeforeBackward::apply(output, reinterpret_cast<int64_t>(this));
}

void PerParamUnit::unshard_for_backward() {
  if (!needs_backward_unshard_) return;
  profile::ScopedSpan span("unshard", "unshard", UnitLabel(path_));
  unshard();  // refills the same storages (or completes their prefetch)
  needs_backward_unshard_ = false;
  if (options_.after_backward_unshard) options_.after_backward_unshard(*this);
}

void PerParamUnit::prepare_recompute() {
  if (params_.empty()) return;
  unshard_for_backward();
  unshard();  // no-op when gathered already
  use_unsharded();
}

void PerParamUnit::accept_grad(size_t index, const at::Tensor& grad) {
  ShardedParam& p = params_[index];
  memory::Retag(grad, memory::Category::kGrads);
  if (p.pending_grad.defined()) {
    p.pending_grad.add_(grad);  // the param was used twice in this forward
  } else {
    // Mixed precision: gradients travel and are reduced in reduce_dtype.
    p.pending_grad = grad.to(reduce_options_.dtype()).contiguous();
    if (options_.unsharded_grad_bytes) options_.unsharded_grad_bytes->add(p.pending_grad.nbytes());
  }
  has_pending_grads_ = true;
}

void PerParamUnit::reduce_scatter_grads() {
  profile::ScopedSpan span("reduce_scatter", "reduce_scatter", UnitLabel(path_));
  c10::NoGradGuard no_grad;
  const int ws = world_size();
  at::Tensor out;
  if (ws > 1) {
    at::Tensor in;
    {
      memory::ScopedCategory buffers(memory::Category::kCommBuffers);
      in = at::zeros({reduce_numel_ * ws}, reduce_options_);  // padding and params without a gradient stay 0
    }
    for (const auto& p : params_) {
      if (!p.requires_grad || !p.pending_grad.defined()) continue;
      const auto& l = p.layout;
      const at::Tensor rows = p.pending_grad.view({l.rows, l.row_numel});
      for (int r = 0; r < ws; ++r) {
        const int64_t n = l.local_rows(r);
        if (n > 0) in.narrow(0, r * reduce_numel_ + p.reduce_offset, n * l.row_numel).view({n, l.row_numel}).copy_(rows.narrow(0, l.first_row(r), n));
      }
    }
    {
      memory::ScopedCategory grads(memory::Category::kGrads);
      out = at::empty({reduce_numel_}, reduce_options_);
    }
    comm_->reduce_scatter(out, in);
    out.div_(ws);
  }
  for (auto& p : params_) {
    if (!p.requires_grad) continue;
    at::Tensor shard_grad;
    if (ws > 1) {
      shard_grad = out.narrow(0, p.reduce_offset, p.sharded.numel()).view(p.sharded.sizes());
    } else if (p.pending_grad.defined()) {
      shard_grad = p.pending_grad;  // one rank: the full gradient is the shard's
    } else {
      continue;
    }
    // The sharded (master) gradient keeps the parameter's dtype.
    if (shard_grad.scalar_type() != p.sharded.scalar_type()) shard_grad = shard_grad.to(p.sharded.scalar_type());
    if (p.sharded.grad().defined()) {
      p.sharded.mutable_grad().add_(shard_grad);  // accumulating micro-batches
    } else {
      p.sharded.mutable_grad() = shard_grad;
    }
    if (p.pending_grad.defined() && options_.unsharded_grad_bytes) options_.unsharded_grad_bytes->sub(p.pending_grad.nbytes());
    p.pending_grad = at::Tensor();
  }
  if (out.defined()) grad_buffers_.push_back(out);
  has_pending_grads_ = false;
}

void PerParamUnit::finish_backward() {
  if (has_pending_grads_) reduce_scatter_grads();
  if (unsharded_ || needs_backward_unshard_) {
    free_unsharded();
    use_sharded();
  }
  needs_backward_unshard_ = false;
  input_grads_.disarm();
}

void PerParamUnit::zero_grad() {
  for (auto& p : params_) {
    if (p.sharded.grad().defined()) p.sharded.mutable_grad() = at::Tensor();
  }
  grad_buffers_.clear();
}

std::vector<std::pair<std::string, at::Tensor>> PerParamUnit::gather_full_params() {
  // In each param's own stored dtype (checkpoints, fingerprints): gathered uncast.
  std::vector<at::Tensor> dst;
  std::vector<at::ScalarType> dtypes;
  for (const auto& p : params_) {
    dst.push_back(at::empty(p.shape, p.padded.options()));
    dtypes.push_back(p.padded.scalar_type());
  }
  GatherInto(PlanGather(gather_plan_.layouts, dtypes), padded_shards(), dst, comm_);
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) out.push_back({params_[i].name, dst[i]});
  return out;
}

std::map<c10::ScalarType, int64_t> PerParamUnit::sharded_param_bytes_by_dtype() const {
  std::map<c10::ScalarType, int64_t> out;
  for (const auto& p : params_) out[p.padded.scalar_type()] += p.padded.nbytes();
  return out;
}

int64_t PerParamUnit::sharded_param_bytes() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.padded.nbytes();
  return n;
}

int64_t PerParamUnit::full_bytes() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.unsharded.numel() * static_cast<int64_t>(p.unsharded.element_size());
  return n;
}

int64_t PerParamUnit::unsharded_param_bytes() const { return unsharded_ ? full_bytes() : 0; }

int64_t PerParamUnit::sharded_grad_bytes() const {
  int64_t n = 0;
  for (const auto& b : grad_buffers_) n += b.nbytes();
  if (world_size() == 1) {
    for (const auto& p : params_) {
      if (p.sharded.grad().defined()) n += p.sharded.grad().nbytes();
    }
  }
  return n;
}

}  // namespace shardbench::shard
