#include "engine/optim/grad_clip.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

namespace shardbench::optim {

double ClipGradNorm(const std::vector<at::Tensor>& grads, double max_norm, comm::Communicator* comm) {
  c10::NoGradGuard no_grad;
  at::Tensor sum_sq = at::zeros({1}, at::kDouble);
  for (const auto& g : grads) {
    if (g.defined() && g.numel() > 0) sum_sq += g.detach().to(at::kDouble).pow(2).sum().cpu();
  }
  if (comm && comm->world_size() > 1) comm->all_reduce(sum_sq);
  const double total = std::sqrt(sum_sq.item<double>());
  // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1.
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0) {
    for (const auto& g : grads) {
      if (g.defined()) const_cast<at::Tensor&>(g).mul_(coef);
    }
  }
  return total;
}

}  // namespace shardbench::optim
