#include "engine/train/trainer.h"

#include <ATen/ATen.h>

#include <chrono>

#include "engine/memory/tracking_allocator.h"

namespace shardbench::train {
namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Trainer::Trainer(model::LlamaForCausalLM& model, optim::AdamW& optimizer, comm::Communicator* comm,
                 GradientSync* sync)
    : model_(model), optimizer_(optimizer), comm_(comm), sync_(sync) {}

StepTimes Trainer::step(const model::Batch& batch) {
  StepTimes t;
  const auto start = Clock::now();
  optimizer_.zero_grad();
  if (sync_) sync_->zero_grad();
  at::Tensor loss;
  {
    // Everything forward and backward allocate is activations unless an engine says otherwise
    // (unsharded buffers, gradient shards); gradients are retagged by the engine afterwards.
    memory::ScopedCategory activations(memory::Category::kActivations);
    loss = model_.loss(batch.input_ids, batch.labels);
    loss.backward();
  }
  t.forward_backward = Since(start);

  const auto sync = Clock::now();
  if (sync_) sync_->after_backward();
  at::Tensor global_loss = loss.detach().clone();
  if (comm_ && comm_->world_size() > 1) {
    comm_->all_reduce(global_loss);
    global_loss.div_(comm_->world_size());
  }
  t.grad_sync = Since(sync);
  const auto opt = Clock::now();
  optimizer_.step();
  t.optimizer = Since(opt);
  t.seconds = Since(start);
  t.loss = global_loss.item<double>();
  return t;
}

}  // namespace shardbench::train
