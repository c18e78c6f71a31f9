// Runs one scenario instance as one rank of its job: the recipe a reader follows top to
// bottom (connect, build model, optimizer, train with timers, gather, check). Rank 0 returns
// the RunResult; other ranks return nothing.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "engine/comm/rendezvous.h"
#include <torch/csrc/distributed/c10d/Store.hpp>
#include "reporters/run_result.h"
#include "harness/scenario/scenario.h"

namespace shardbench {

struct StepProgress {
  int64_t step = 0, total = 0;
  bool warmup = false;
  double loss = 0, tokens_per_s = 0;
  int64_t rss_bytes = 0;
};

struct RunnerOptions {
  std::string run_id;
  // Where a scenario's checkpoint is written (`checkpoint.type`); every rank must see it.
  std::string checkpoint_dir = "checkpoint";
  // Where rank 0 writes the ranks' merged timeline when the scenario asks for profile.trace.
  std::string trace_file = "trace.json";
  // Called on rank 0 after every step (progress line).
  std::function<void(const StepProgress&)> on_step;
  // A store the job's ranks already share (one job running many instances, harness/job_rank.h),
  // under this instance's own prefix; null: rendezvous at MASTER_ADDR:MASTER_PORT.
  c10::intrusive_ptr<c10d::Store> store;
};

std::optional<RunResult> RunScenarioRank(const Scenario& scenario, const comm::RankEnv& env,
                                         const RunnerOptions& options);

}  // namespace shardbench
