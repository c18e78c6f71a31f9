// What runs inside a training step without being training: the failpoints that inject known
// faults for the catalog and the gate's own tests (engine/common/failpoints.h). The Trainer
// calls a StepHooks at two points of every step; TrainerOptions without one runs none, so a
// step is training alone. harness/engine_setup.cc installs FailpointHooks() for scenarios.
#pragma once

#include "engine/comm/communicator.h"

namespace shardbench::train {

class StepHooks {
 public:
  virtual ~StepHooks() = default;
  // Before any of the step's work. `past_first_step`: this trainer took a step already.
  virtual void before_step(comm::Communicator* comm, bool past_first_step) {}
  // After the optimizer step, before the loss is read (the step's timer still runs):
  // `elapsed` seconds since the step began, `blocked` of them waiting in collectives.
  virtual void after_optimizer(comm::Communicator* comm, double elapsed, double blocked) {}
  // After the loss is read, the step's last collective done on every rank (the timer still
  // runs): work here lengthens the step by itself, none of it hidden in a peer's wait.
  virtual void before_step_ends(double elapsed) {}
};

// The failpoints as hooks: rank1_fails and rank1_lost_once before a step; straggler_rank1 after
// the optimizer; slow_step_*pct as the step ends (engine/train/failpoint_hooks.cc says how each acts).
StepHooks* FailpointHooks();

}  // namespace shardbench::train
