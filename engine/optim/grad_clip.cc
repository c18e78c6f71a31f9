#include "engine/optim/grad_clip.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace shardbench::optim {

// Without a host synchronisation (as torch's clip_grad_norm_): the norm stays a tensor on the
// gradients' device and every gradient is scaled by the clamped coefficient, 1 included (x * 1
// is x). The squares are summed in double, gradient by gradient in order, so the norm and the
// scaled gradients are the same bits as when the sum was read back to the host each time.
at::Tensor ClipGradNorm(const std::vector<at::Tensor>& grads, double max_norm, comm::Communicator* comm) {
  c10::NoGradGuard no_grad;
  at::Device device(at::kCPU);
  for (const auto& g : grads) {
    if (g.defined()) {
      device = g.device();
      break;
    }
  }
  at::Tensor sum_sq = at::zeros({1}, at::TensorOptions().dtype(at::kDouble).device(device));
  for (const auto& g : grads) {
    if (g.defined() && g.numel() > 0) sum_sq += g.detach().to(at::kDouble).pow(2).sum();
  }
  if (comm && comm->world_size() > 1) comm->all_reduce(sum_sq);
  const at::Tensor total = sum_sq.sqrt();
  // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1.
  const at::Tensor coef = at::clamp_max(at::full_like(total, max_norm).div_(total + 1e-6), 1.0);
  const at::Tensor coef_float = coef.to(at::kFloat);
  for (const auto& g : grads) {
    if (!g.defined()) continue;
    at::Tensor& grad = const_cast<at::Tensor&>(g);
    if (grad.scalar_type() == at::kDouble) {
      grad.mul_(coef);
    } else if (grad.scalar_type() == at::kFloat) {
      grad.mul_(coef_float);
    } else {  // as a double scalar multiplies a narrow tensor: in float, rounded once
      grad.copy_(grad.to(at::kFloat).mul_(coef_float));
    }
  }
  return total.squeeze(0);
}

}  // namespace shardbench::optim
