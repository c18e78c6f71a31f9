#include "engine/optim/adamw.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "engine/common/error.h"
#include "engine/common/planted_work.h"
#include "engine/memory/tracking_allocator.h"

namespace shardbench::optim {

AdamWImpl ParseAdamWImpl(const std::string& name) {
  if (name == "for_loop") return AdamWImpl::kForLoop;
  if (name == "foreach") return AdamWImpl::kForeach;
  if (name == "fused") return AdamWImpl::kFused;
  throw InputError("optimizer impl '" + name + "': expected one of for_loop, foreach, fused");
}

const char* AdamWImplName(AdamWImpl impl) {
  switch (impl) {
    case AdamWImpl::kForLoop: return "for_loop";
    case AdamWImpl::kForeach: return "foreach";
    case AdamWImpl::kFused: return "fused";
  }
  return "?";
}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options) : groups_(std::move(groups)), options_(options) {
  for (const auto& g : groups_) state_.emplace_back(g.params.size());
}

AdamW::Active AdamW::collect(size_t gi) {
  Active a;
  const auto& g = groups_[gi];
  for (size_t pi = 0; pi < g.params.size(); ++pi) {
    const at::Tensor& p = g.params[pi];
    if (!p.grad().defined()) continue;
    State& s = state_[gi][pi];
    if (!s.defined()) allocate(s, p);
    s.step += 1;
    a.params.push_back(p);
    a.grads.push_back(p.grad());
    a.exp_avgs.push_back(s.exp_avg);
    a.exp_avg_sqs.push_back(s.exp_avg_sq);
    if (s.step_tensor.defined()) a.steps.push_back(s.step_tensor);
    a.states.push_back(&s);
  }
  return a;
}

void AdamW::allocate(State& s, const at::Tensor& p) {
  memory::ScopedCategory state_bytes(memory::Category::kOptimState);
  s.exp_avg = at::zeros_like(p, at::MemoryFormat::Preserve);
  s.exp_avg_sq = at::zeros_like(p, at::MemoryFormat::Preserve);
  if (options_.impl == AdamWImpl::kFused) s.step_tensor = at::zeros({}, p.options().dtype(at::kFloat));
}

AdamWState* AdamW::find_state(const at::Tensor& param) {
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      if (groups_[gi].params[pi].is_same(param)) return &state_[gi][pi];
    }
  }
  return nullptr;
}

AdamWState& AdamW::materialize_state(const at::Tensor& param) {
  AdamWState* s = find_state(param);
  if (!s) throw InputError("optimizer state: the optimizer does not hold this parameter");
  if (!s->defined()) {
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      for (const auto& p : groups_[gi].params) {
        if (p.is_same(param)) allocate(*s, p);
      }
    }
  }
  return *s;
}

void AdamW::sync_step_tensor(AdamWState& state) {
  if (state.step_tensor.defined()) state.step_tensor.fill_(static_cast<double>(state.step));
}

void AdamW::step() {
  c10::NoGradGuard no_grad;
  // Failpoint slow_optimizer_*pct: extra CPU work inside the optimizer's own step.
  if (const int64_t planted = PlantedOptimizerIterations()) PlantedWork(planted);
  ++step_;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Active a = collect(gi);
    if (a.params.empty()) continue;
    switch (options_.impl) {
      case AdamWImpl::kForLoop: step_for_loop(groups_[gi], a); break;
      case AdamWImpl::kForeach: step_foreach(groups_[gi], a); break;
      case AdamWImpl::kFused: step_fused(groups_[gi], a); break;
    }
  }
}

// torch.optim.adamw._single_tensor_adamw, in the same order of operations.
void AdamW::step_for_loop(const ParamGroup& g, Active& a) {
  for (size_t i = 0; i < a.params.size(); ++i) {
    at::Tensor& p = a.params[i];
    const double step = static_cast<double>(a.states[i]->step);
    p.mul_(1.0 - g.lr * g.weight_decay);
    a.exp_avgs[i].lerp_(a.grads[i], 1.0 - options_.beta1);
    a.exp_avg_sqs[i].mul_(options_.beta2).addcmul_(a.grads[i], a.grads[i], 1.0 - options_.beta2);
    const double bias_correction1 = 1.0 - std::pow(options_.beta1, step);
    const double bias_correction2 = 1.0 - std::pow(options_.beta2, step);
    const double step_size = g.lr / bias_correction1;
    at::Tensor denom = (a.exp_avg_sqs[i].sqrt() / std::sqrt(bias_correction2)).add_(options_.eps);
    p.addcdiv_(a.exp_avgs[i], denom, -step_size);
  }
}

// torch.optim.adamw._multi_tensor_adamw (capturable=False): the same arithmetic, each step
// over the whole group at once.
void AdamW::step_foreach(const ParamGroup& g, Active& a) {
  at::_foreach_mul_(a.params, 1.0 - g.lr * g.weight_decay);
  at::_foreach_lerp_(a.exp_avgs, a.grads, 1.0 - options_.beta1);
  at::_foreach_mul_(a.exp_avg_sqs, options_.beta2);
  at::_foreach_addcmul_(a.exp_avg_sqs, a.grads, a.grads, 1.0 - options_.beta2);
  std::vector<at::Scalar> step_sizes, bias_correction2_sqrt;
  for (const State* s : a.states) {
    const double step = static_cast<double>(s->step);
    step_sizes.push_back(-g.lr / (1.0 - std::pow(options_.beta1, step)));
    bias_correction2_sqrt.push_back(std::sqrt(1.0 - std::pow(options_.beta2, step)));
  }
  std::vector<at::Tensor> denom = at::_foreach_sqrt(a.exp_avg_sqs);
  at::_foreach_div_(denom, bias_correction2_sqrt);
  at::_foreach_add_(denom, options_.eps);
  at::_foreach_addcdiv_(a.params, a.exp_avgs, denom, step_sizes);
}

void AdamW::step_fused(const ParamGroup& g, Active& a) {
  at::_foreach_add_(a.steps, 1.0);  // torch increments the step tensors before the kernel
  try {
    at::_fused_adamw_(a.params, a.grads, a.exp_avgs, a.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, a.steps, g.lr,
                      options_.beta1, options_.beta2, g.weight_decay, options_.eps, /*amsgrad=*/false,
                      /*maximize=*/false);
  } catch (const c10::Error& e) {
    throw InputError(std::string("optimizer impl 'fused' is not supported here (") + a.params.front().device().str() +
                     ", " + std::string(c10::toString(a.params.front().scalar_type())) +
                     "): " + e.what_without_backtrace() + "; use for_loop or foreach");
  }
}

void AdamW::zero_grad() {
  for (auto& g : groups_) {
    for (auto& p : g.params) {
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
    }
  }
}

int64_t AdamW::state_bytes() const {
  int64_t n = 0;
  for (const auto& group : state_) {
    for (const auto& s : group) {
      if (s.exp_avg.defined()) n += s.exp_avg.nbytes() + s.exp_avg_sq.nbytes();
      if (s.step_tensor.defined()) n += s.step_tensor.nbytes();
    }
  }
  return n;
}

}  // namespace shardbench::optim
