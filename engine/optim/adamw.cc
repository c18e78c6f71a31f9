#include "engine/optim/adamw.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "engine/memory/tracking_allocator.h"

namespace shardbench::optim {

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options) : groups_(std::move(groups)), options_(options) {
  for (const auto& g : groups_) state_.emplace_back(g.params.size());
}

void AdamW::step() {
  c10::NoGradGuard no_grad;
  ++step_;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& g = groups_[gi];
    for (size_t pi = 0; pi < g.params.size(); ++pi) {
      const at::Tensor& p = g.params[pi];
      const at::Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      State& s = state_[gi][pi];
      if (!s.exp_avg.defined()) {
        memory::ScopedCategory state_bytes(memory::Category::kOptimState);
        s.exp_avg = at::zeros_like(p, at::MemoryFormat::Preserve);
        s.exp_avg_sq = at::zeros_like(p, at::MemoryFormat::Preserve);
      }
      s.step += 1;
      // Same order of operations as torch.optim.adamw._single_tensor_adamw.
      p.mul_(1.0 - g.lr * g.weight_decay);
      s.exp_avg.lerp_(grad, 1.0 - options_.beta1);
      s.exp_avg_sq.mul_(options_.beta2).addcmul_(grad, grad, 1.0 - options_.beta2);
      const double bias_correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(s.step));
      const double bias_correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(s.step));
      const double step_size = g.lr / bias_correction1;
      at::Tensor denom = (s.exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(options_.eps);
      p.addcdiv_(s.exp_avg, denom, -step_size);
    }
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
    }
  }
  return n;
}

}  // namespace shardbench::optim
