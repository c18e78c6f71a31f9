#include "engine/train/data_parallel.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>

namespace shardbench::train {
namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

DataParallelTrainer::DataParallelTrainer(model::LlamaForCausalLM& model, optim::AdamW& optimizer,
                                         comm::Communicator* comm)
    : model_(model), optimizer_(optimizer), comm_(comm) {
  for (auto& p : model_.named_parameters()) {
    if (p.slot->requires_grad()) trainable_.push_back(*p.slot);
  }
}

void DataParallelTrainer::all_reduce_gradients() {
  c10::NoGradGuard no_grad;
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
      p.mutable_grad() = g.clone();
    }
    offset += p.numel();
  }
}

StepTimes DataParallelTrainer::step(const model::Batch& batch) {
  StepTimes t;
  const auto start = Clock::now();
  optimizer_.zero_grad();
  at::Tensor loss = model_.loss(batch.input_ids, batch.labels);
  loss.backward();
  t.forward_backward = Since(start);

  at::Tensor global_loss = loss.detach().clone();
  if (comm_ && comm_->world_size() > 1) {
    const auto sync = Clock::now();
    all_reduce_gradients();
    comm_->all_reduce(global_loss);
    global_loss.div_(comm_->world_size());
    t.grad_sync = Since(sync);
  }
  const auto opt = Clock::now();
  optimizer_.step();
  t.optimizer = Since(opt);
  t.seconds = Since(start);
  t.loss = global_loss.item<double>();
  return t;
}

}  // namespace shardbench::train
