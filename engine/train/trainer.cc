#include "engine/train/trainer.h"

#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/failpoints.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/optim/grad_clip.h"
#include "engine/profile/span_recorder.h"

namespace shardbench::train {
namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Trainer::Trainer(model::LlamaForCausalLM& model, optim::AdamW& optimizer, comm::Communicator* comm,
                 GradientSync* sync, TrainerOptions options)
    : model_(model), optimizer_(optimizer), comm_(comm), sync_(sync), options_(options) {
  for (const auto& g : optimizer_.groups()) base_lrs_.push_back(g.lr);
  steps_ = options_.first_step;
}

// Failpoints rank1_fails and rank1_lost_once: rank 1 stops in its second step, after the
// first step's collectives (a rank lost mid-instance); its peers find out in their next
// collective. rank1_fails throws; rank1_lost_once ends the process as if killed, in a job's
// first attempt only (torchrun's TORCHELASTIC_RESTART_COUNT unset or 0), so a restart succeeds.
static void RankFailpoints(comm::Communicator* comm, bool past_first_step) {
  if (!comm || comm->rank() != 1 || !past_first_step) return;
  if (FailpointActive("rank1_fails")) throw InfraError("failpoint rank1_fails: rank 1 stopped in its second step");
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (FailpointActive("rank1_lost_once") && (!attempt || std::string(attempt) == "0")) {
    std::fflush(nullptr);
    std::_Exit(137);
  }
}

StepTimes Trainer::step(const std::vector<model::Batch>& micro_batches) {
  RankFailpoints(comm_, steps_ > options_.first_step);
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
  at::Tensor global_loss = loss_sum / static_cast<double>(micro_batches.size());
  if (comm_ && comm_->world_size() > 1) {
    comm_->all_reduce(global_loss);
    global_loss.div_(comm_->world_size());
  }
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
  // Failpoints slow_step_5pct / 10pct / 20pct: a known slowdown for measuring the gate. It
  // spins rather than sleeps: extra work holds the core as real compute would (a sleeping rank
  // hands its core to the other ranks' threads, which hides most of the delay on a small host).
  const double slow = FailpointActive("slow_step_20pct")   ? 0.20
                      : FailpointActive("slow_step_10pct") ? 0.10
                      : FailpointActive("slow_step_5pct")  ? 0.05
                                                           : 0.0;
  const double spin = slow * Since(start);
  // Failpoint straggler_rank1: rank 1 alone stays away twice as long as it was busy so far this
  // step, so its busy time triples while its peers wait for it in their next collective (their
  // step times grow too: only busy time tells the straggler apart). Three times, not two: on a
  // host with fewer cores than ranks the peers' busy time includes waiting for a core, which
  // pulled a doubled rank's ratio down to 1.2-1.9 here, too close to an even job's 0.8-1.1. It sleeps where the slowdowns
  // above spin: a real straggler is slow on its own hardware, and a spinning rank on a host
  // with fewer cores than ranks would take its peers' cores, lengthening their busy time too
  // (measured on 2 cores, 3 ranks: ratio ~1.25 spinning against ~1.4-1.9 sleeping).
  if (FailpointActive("straggler_rank1") && comm_ && comm_->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::duration<double>(2 * (Since(start) - blocked())));
  }
  if (spin > 0) {
    profile::ScopedSpan span("failpoint", "failpoint spin");  // stands in for compute
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spin));
    while (Clock::now() < until) {
    }
  }
  // Reading the loss waits for the step's device work: the step time includes it (on a GPU the
  // optimizer's kernels would otherwise still be running when the timer stops).
  t.loss = global_loss.item<double>();
  t.local_loss = loss_sum.item<double>() / static_cast<double>(micro_batches.size());
  t.seconds = Since(start);
  t.comm_wait = blocked();
  return t;
}

}  // namespace shardbench::train
