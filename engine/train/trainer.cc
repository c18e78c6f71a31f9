#include "engine/train/trainer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <optional>

#include "engine/common/error.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/optim/grad_clip.h"
#include "engine/profile/span_recorder.h"
#include "engine/train/host_sync.h"

namespace shardbench::train {
namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Trainer::Trainer(model::LlamaForCausalLM& model, optim::AdamW& optimizer, comm::Communicator* comm, GradientSync* sync,
                 TrainerOptions options)
    : model_(model), optimizer_(optimizer), comm_(comm), sync_(sync), options_(options) {
  for (const auto& g : optimizer_.groups()) base_lrs_.push_back(g.lr);
  steps_ = options_.first_step;
}

StepTimes Trainer::step(const std::vector<model::Batch>& micro_batches) {
  if (options_.hooks) options_.hooks->before_step(comm_, steps_ > options_.first_step);
  StepTimes t;
  // The step's phases as spans (engine/profile/span_recorder.h): the window the scenario runner
  // sums overlap over is the "step" span.
  profile::ScopedSpan step_span("step", "step");
  const auto start = Clock::now();
  const double blocked_before = comm_ ? comm_->blocked_seconds() : 0.0;
  auto blocked = [&] { return comm_ ? comm_->blocked_seconds() - blocked_before : 0.0; };
  optimizer_.zero_grad();
  if (sync_) sync_->zero_grad();
  at::Tensor loss_sum;
  {
    // Everything forward and backward allocate is activations unless an engine says otherwise
    // (unsharded buffers, gradient shards); gradients are retagged by the engine afterwards.
    memory::ScopedCategory activations(memory::Category::kActivations);
    const double scale = 1.0 / static_cast<double>(micro_batches.size());
    for (const auto& batch : micro_batches) {
      at::Tensor loss;
      {
        profile::ScopedSpan span("forward", "forward");
        loss = model_.loss(batch.input_ids, batch.labels);
      }
      profile::ScopedSpan span("backward", "backward");
      (loss * scale).backward();
      loss_sum = loss_sum.defined() ? loss_sum + loss.detach() : loss.detach();
    }
  }
  t.forward_backward = Since(start);

  const auto sync = Clock::now();
  std::optional<profile::ScopedSpan> sync_span(std::in_place, "grad_sync", "grad_sync");
  if (sync_) sync_->after_backward();
  at::Tensor global_loss = global_mean(loss_sum, micro_batches.size());
  t.grad_sync = Since(sync);
  sync_span.reset();
  const auto opt = Clock::now();
  std::optional<profile::ScopedSpan> optimizer_span(std::in_place, "optimizer", "optimizer");
  if (options_.max_grad_norm > 0) {
    std::vector<at::Tensor> grads;
    bool sharded = false;
    if (sync_) {
      grads = sync_->local_grads();
      sharded = sync_->grads_sharded();
    } else {
      for (auto& g : optimizer_.groups()) {
        for (auto& p : g.params) {
          if (p.grad().defined()) grads.push_back(p.grad());
        }
      }
    }
    last_grad_norm_ = optim::ClipGradNorm(grads, options_.max_grad_norm, sharded ? comm_ : nullptr);
  }
  const double lr_factor = options_.lr_schedule.factor(steps_++);
  for (size_t i = 0; i < base_lrs_.size(); ++i) optimizer_.groups()[i].lr = base_lrs_[i] * lr_factor;
  optimizer_.step();
  t.optimizer = Since(opt);
  optimizer_span.reset();
  if (options_.hooks) options_.hooks->after_optimizer(comm_, Since(start), blocked());
  // Reading the loss waits for the step's device work: the step time includes it (on a GPU the
  // optimizer's kernels would otherwise still be running when the timer stops). It is the step's
  // one host synchronisation (engine/train/host_sync.h): both losses in one read.
  at::Tensor losses;
  {
    AllowedHostSync the_loss_read;
    losses = at::stack({global_loss.reshape({}), loss_sum.reshape({})}).to(at::kDouble).cpu();
  }
  t.loss = losses[0].item<double>();
  t.local_loss = losses[1].item<double>() / static_cast<double>(micro_batches.size());
  if (options_.hooks) options_.hooks->before_step_ends(Since(start));
  t.seconds = Since(start);
  t.comm_wait = blocked();
  return t;
}

at::Tensor Trainer::global_mean(const at::Tensor& loss_sum, size_t micro_batches) {
  at::Tensor global_loss = loss_sum / static_cast<double>(micro_batches);
  if (comm_ && comm_->world_size() > 1) {
    comm_->all_reduce(global_loss);
    global_loss.div_(comm_->world_size());
  }
  return global_loss;
}

double Trainer::evaluate(const std::vector<model::Batch>& micro_batches) {
  at::Tensor loss_sum;
  {
    c10::NoGradGuard no_grad;
    memory::ScopedCategory activations(memory::Category::kActivations);
    for (const auto& batch : micro_batches) {
      at::Tensor loss = model_.loss(batch.input_ids, batch.labels);
      loss_sum = loss_sum.defined() ? loss_sum + loss : loss;
    }
  }
  if (sync_) sync_->after_evaluation();
  at::Tensor global_loss = global_mean(loss_sum, micro_batches.size());
  return global_loss.item<double>();
}

}  // namespace shardbench::train
