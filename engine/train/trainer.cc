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

StepTimes Trainer::step(const std::vector<model::Batch>& micro_batches) {
  StepTimes t;
  const auto start = Clock::now();
  optimizer_.zero_grad();
  if (sync_) sync_->zero_grad();
  at::Tensor loss_sum;
  {
    // Everything forward and backward allocate is activations unless an engine says otherwise
    // (unsharded buffers, gradient shards); gradients are retagged by the engine afterwards.
    memory::ScopedCategory activations(memory::Category::kActivations);
    const double scale = 1.0 / static_cast<double>(micro_batches.size());
    for (const auto& batch : micro_batches) {
      at::Tensor loss = model_.loss(batch.input_ids, batch.labels);
      (loss * scale).backward();
      loss_sum = loss_sum.defined() ? loss_sum + loss.detach() : loss.detach();
    }
  }
  t.forward_backward = Since(start);

  const auto sync = Clock::now();
  if (sync_) sync_->after_backward();
  at::Tensor global_loss = loss_sum / static_cast<double>(micro_batches.size());
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
