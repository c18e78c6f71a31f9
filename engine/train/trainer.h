// One training step, in order: zero grads, forward + loss, backward, the engine's gradient
// sync, optimizer step. The global loss (mean over ranks) is what parity checks compare.
#pragma once

#include <vector>

#include "engine/comm/communicator.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/adamw.h"
#include "engine/optim/lr_schedule.h"
#include "engine/train/gradient_sync.h"
#include "engine/train/step_hooks.h"

namespace shardbench::train {

struct StepTimes {
  double loss = 0.0;        // mean over all ranks' tokens and micro-batches (global loss)
  double local_loss = 0.0;  // this rank's part of it: which rank diverged first
  double seconds = 0.0;
  double forward_backward = 0.0;  // includes the communication an engine does inside backward
  double grad_sync = 0.0;         // after backward (all-reduce; finishing reduce-scatters)
  double optimizer = 0.0;
  // Of `seconds`, the time this rank's thread sat blocked in collectives' wait() (0 with no
  // communicator): seconds - comm_wait is the time it was busy, which a straggler shows.
  double comm_wait = 0.0;
};

struct TrainerOptions {
  double max_grad_norm = 0.0;     // > 0: clip by global norm before the optimizer step
  optim::LrSchedule lr_schedule;  // applied to every group's base lr before each step
  int64_t first_step = 0;         // steps already taken (a resumed run continues the schedule)
  StepHooks* hooks = nullptr;     // the failpoints (engine/train/step_hooks.h); null: none
};

class Trainer {
 public:
  // `comm` may be null (single process); `sync` may be null (nothing to synchronise).
  Trainer(model::LlamaForCausalLM& model, optim::AdamW& optimizer, comm::Communicator* comm, GradientSync* sync,
          TrainerOptions options = {});
  // The global gradient norm of the last step (before clipping); 0 when not clipping.
  double last_grad_norm() const { return last_grad_norm_.defined() ? last_grad_norm_.item<double>() : 0.0; }
  // One optimizer step over this rank's micro-batches: gradients accumulate across them (each
  // loss scaled by 1/count, so the step sees the mean over all of them) and are synchronised once.
  StepTimes step(const std::vector<model::Batch>& micro_batches);
  StepTimes step(const model::Batch& local_batch) { return step(std::vector<model::Batch>{local_batch}); }
  // The global loss of `micro_batches` with the weights as they are now: forward only, under
  // no_grad, nothing updated (the learning check's same-batch loss). Collective.
  double evaluate(const std::vector<model::Batch>& micro_batches);

 private:
  model::LlamaForCausalLM& model_;
  optim::AdamW& optimizer_;
  comm::Communicator* comm_;
  GradientSync* sync_;
  TrainerOptions options_;
  // The mean over micro-batches and ranks of this rank's summed loss (collective).
  at::Tensor global_mean(const at::Tensor& loss_sum, size_t micro_batches);

  std::vector<double> base_lrs_;
  int64_t steps_ = 0;
  at::Tensor last_grad_norm_;  // read only when asked: a host synchronisation
};

}  // namespace shardbench::train
