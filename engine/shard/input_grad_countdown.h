// How a unit learns that its backward is over when nothing else tells it (FSDP2's
// post-backward; FSDP1's "reshard only" hook for units without trainable parameters): count
// the forward inputs that require grad, hook each one's gradient, and call `done` when the
// last has arrived. Re-armed by every forward.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <utility>

namespace shardbench::shard {

class InputGradCountdown {
 public:
  // The object must outlive the hooks (the unit owning it outlives the step's autograd graph).
  void arm(at::ArrayRef<at::Tensor> inputs, std::function<void()> done) {
    done_ = std::move(done);
    pending_ = 0;
    for (const auto& in : inputs) {
      if (!in.defined() || !in.requires_grad()) continue;
      ++pending_;
      in.register_hook([this](const at::TensorBase&) {
        if (--pending_ == 0) done_();
      });
    }
  }

  // Backward ended another way: gradients still to come call nothing.
  void disarm() { pending_ = 0; }

 private:
  std::function<void()> done_;
  int pending_ = 0;
};

}  // namespace shardbench::shard
