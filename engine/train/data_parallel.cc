#include "engine/train/data_parallel.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "engine/memory/tracking_allocator.h"

namespace shardbench::train {

AllReduceGradients::AllReduceGradients(model::Module& model, comm::Communicator* comm) : comm_(comm) {
  for (auto& p : model.named_parameters()) {
    if (p.slot->requires_grad()) trainable_.push_back(*p.slot);
  }
}

std::vector<at::Tensor> AllReduceGradients::local_grads() {
  std::vector<at::Tensor> out;
  for (auto& p : trainable_) {
    if (p.grad().defined()) out.push_back(p.grad());
  }
  return out;
}

void AllReduceGradients::after_backward() {
  for (auto& p : trainable_) memory::Retag(p.grad(), memory::Category::kGrads);
  if (!comm_ || comm_->world_size() == 1 || trainable_.empty()) return;
  c10::NoGradGuard no_grad;
  memory::ScopedCategory bucket_bytes(memory::Category::kCommBuffers);
  std::vector<at::Tensor> grads;
  for (auto& p : trainable_) {
    grads.push_back(p.grad().defined() ? p.grad().reshape({-1}) : at::zeros({p.numel()}, p.options()));
  }
  at::Tensor bucket = at::cat(grads);
  comm_->all_reduce(bucket);
  bucket.div_(comm_->world_size());
  int64_t offset = 0;
  for (auto& p : trainable_) {
    at::Tensor g = bucket.narrow(0, offset, p.numel()).view(p.sizes());
    if (p.grad().defined()) {
      p.mutable_grad().copy_(g);
    } else {
      memory::ScopedCategory grads(memory::Category::kGrads);
      p.mutable_grad() = g.clone();
    }
    offset += p.numel();
  }
}

}  // namespace shardbench::train
