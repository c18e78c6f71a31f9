#include "engine/shard/per_param_unit.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "engine/common/error.h"
#include "engine/memory/tracking_allocator.h"
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
  for (const auto& np : plan.params) {
    const at::Tensor& t = *np.slot;
    const at::Tensor& first = *plan.params.front().slot;
    // Mixed precision casts every param to param_dtype before the all-gather, so storage dtypes
    // may differ then (frozen bf16 next to trainable fp32); otherwise one unit, one dtype.
    const bool dtype_ok = options_.mixed_precision.param_dtype.has_value() || t.scalar_type() == first.scalar_type();
    if (!dtype_ok || t.device() != first.device()) {
      throw InputError("unit '" + unit_name + "': '" + np.name + "' is " + std::string(c10::toString(t.scalar_type())) +
                       " on " + t.device().str() + ", '" + plan.params.front().name + "' is " +
                       std::string(c10::toString(first.scalar_type())) + " on " + first.device().str() +
                       ": one unit gathers one dtype on one device (set a mixed-precision param_dtype to cast)");
    }
    ShardedParam p;
    p.name = np.name;
    p.slot = np.slot;
    p.shape = t.sizes().vec();
    p.layout = ComputeDim0Layout(p.shape, world_size());
    p.requires_grad = t.requires_grad();
    p.gather_offset = gather_numel_;
    gather_numel_ += p.layout.padded_numel();
    if (p.requires_grad) {
      p.reduce_offset = reduce_numel_;
      reduce_numel_ += p.layout.padded_numel();
    }
    // Meta-device init: the shard is allocated on the real device and only its rows are filled.
    const bool meta = t.is_meta();
    if (meta && !options_.materialize.fill) throw InfraError("unit '" + unit_name + "': '" + np.name + "' is on the meta device and nothing materialises it");
    const at::TensorOptions opts = t.options().requires_grad(false).device(meta ? options_.materialize.device : t.device());
    gather_options_ = opts.dtype(options_.mixed_precision.gather(first.scalar_type()));
    reduce_options_ = opts.dtype(options_.mixed_precision.reduce(first.scalar_type()));
    const int64_t n = p.layout.local_rows(rank());
    {
      memory::ScopedCategory sharded(memory::Category::kParamsSharded);
      p.padded = at::zeros(PaddedShape(p.shape, p.layout), opts);
    }
    if (meta) {
      options_.materialize.fill(p.name, p.padded.view({-1}).narrow(0, 0, n * p.layout.row_numel),
                                p.layout.first_row(rank()) * p.layout.row_numel);
    } else if (n > 0) {
      p.padded.view({p.layout.rows_per_rank, p.layout.row_numel})
          .narrow(0, 0, n)
          .copy_(t.detach().reshape({p.layout.rows, p.layout.row_numel}).narrow(0, p.layout.first_row(rank()), n));
    }
    p.sharded = p.padded.narrow(0, 0, n).detach().requires_grad_(p.requires_grad);
    {
      memory::ScopedCategory unsharded(memory::Category::kParamsUnsharded);
      p.unsharded = at::empty(p.shape, gather_options_);
    }
    FreeStorage(p.unsharded);
    params_.push_back(std::move(p));
  }
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

namespace {
// Copy-in: every param's padded rows, one after the other (the all-gather's input).
at::Tensor CopyIn(const std::vector<ShardedParam>& params, int64_t gather_numel, const at::TensorOptions& opts) {
  memory::ScopedCategory buffers(memory::Category::kCommBuffers);
  at::Tensor in = at::empty({gather_numel}, opts);
  for (const auto& p : params) in.narrow(0, p.gather_offset, p.layout.padded_numel()).copy_(p.padded.view({-1}));
  return in;
}

// Copy-out: each param's real rows from every rank's segment of the all-gather's output.
void CopyOut(const std::vector<ShardedParam>& params, const std::vector<at::Tensor>& dst, const at::Tensor& out,
             int64_t gather_numel, int ws) {
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& l = params[i].layout;
    const at::Tensor rows = dst[i].view({l.rows, l.row_numel});
    for (int r = 0; r < ws; ++r) {
      const int64_t n = l.local_rows(r);
      if (n == 0) continue;
      rows.narrow(0, l.first_row(r), n)
          .copy_(out.narrow(0, r * gather_numel + params[i].gather_offset, n * l.row_numel).view({n, l.row_numel}));
    }
  }
}

// All-gather every param's padded rows of `params` (one collective) and copy each param's real
// rows into dst[i] (contiguous, the param's shape).
void GatherInto(const std::vector<ShardedParam>& params, const std::vector<at::Tensor>& dst, int64_t gather_numel,
                comm::Communicator* comm, const at::TensorOptions& opts) {
  const int ws = comm ? comm->world_size() : 1;
  if (ws == 1) {
    for (size_t i = 0; i < params.size(); ++i) dst[i].view({-1}).copy_(params[i].padded.view({-1}).narrow(0, 0, dst[i].numel()));
    return;
  }
  at::Tensor in = CopyIn(params, gather_numel, opts);
  at::Tensor out;
  {
    memory::ScopedCategory buffers(memory::Category::kCommBuffers);
    out = at::empty({gather_numel * ws}, opts);
  }
  comm->all_gather(out, in);
  CopyOut(params, dst, out, gather_numel, ws);
}
}  // namespace

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
    GatherInto(params_, dst, gather_numel_, comm_, gather_options_);
    return;
  }
  PendingGather g;
  g.in = CopyIn(params_, gather_numel_, gather_options_);
  {
    memory::ScopedCategory buffers(memory::Category::kCommBuffers);
    g.out = at::empty({gather_numel_ * world_size()}, gather_options_);
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
  CopyOut(params_, g.dst, g.out, gather_numel_, world_size());
}

void PerParamUnit::prefetch_for_forward() { start_unshard(/*async=*/true); }

void PerParamUnit::prefetch_for_backward() {
  if (needs_backward_unshard_) start_unshard(/*async=*/true);
}

void PerParamUnit::free_unsharded() {
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
  pending_input_grads_ = 0;
  for (const auto& in : inputs) {
    if (!in.defined() || !in.requires_grad()) continue;
    ++pending_input_grads_;
    in.register_hook([this](const at::TensorBase&) {
      if (--pending_input_grads_ == 0) post_backward();
    });
  }
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
  c10::NoGradGuard no_grad;
  const int ws = world_size(), me = rank();
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

void PerParamUnit::post_backward() {
  if (has_pending_grads_) reduce_scatter_grads();
  if (unsharded_ || needs_backward_unshard_) {
    free_unsharded();
    use_sharded();
  }
  needs_backward_unshard_ = false;
  pending_input_grads_ = 0;
}

void PerParamUnit::zero_grad() {
  for (auto& p : params_) {
    if (p.sharded.grad().defined()) p.sharded.mutable_grad() = at::Tensor();
  }
  grad_buffers_.clear();
}

std::vector<std::pair<std::string, at::Tensor>> PerParamUnit::gather_full_params() {
  std::vector<at::Tensor> dst;
  // In each param's own dtype (checkpoints, fingerprints): gathered uncast.
  for (const auto& p : params_) dst.push_back(at::empty(p.shape, p.padded.options()));
  if (!params_.empty()) GatherInto(params_, dst, gather_numel_, comm_, params_.front().padded.options());
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) out.push_back({params_[i].name, dst[i]});
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
