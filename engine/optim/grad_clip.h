// Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_, norm_type=2): the norm of
// all gradients together; with sharded gradients each rank sums the squares of what it owns
// and the sum is all-reduced, so every rank scales by the same coefficient.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "engine/comm/communicator.h"

namespace shardbench::optim {

// Returns the total norm before clipping, a 0-dim double tensor on the gradients' device (reading
// it is the caller's synchronisation, never this function's). `comm` null: gradients are complete
// on this rank (single process or replicated data parallel).
at::Tensor ClipGradNorm(const std::vector<at::Tensor>& grads, double max_norm, comm::Communicator* comm);

}  // namespace shardbench::optim
