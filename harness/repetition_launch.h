// One repetition of one scenario instance: its ranks launched here (world size 1 runs in this
// process; a peer engine runs PyTorch's FSDP, peers/torch_fsdp), leaving DIR/result.json. And
// this process as one rank of a job (launched by us, torchrun or srun).
#pragma once

#include <functional>
#include <string>

#include "engine/comm/rendezvous.h"
#include "harness/launch_outcome.h"
#include "harness/scenario_runner.h"
#include "harness/output_dir.h"  // SafeName
#include "harness/scenario/scenario.h"

namespace shardbench {

// "20261202-101500" (UTC), for run ids and default results directories.
std::string Timestamp();

// Runs this rank and, on rank 0, writes out_dir/result.json. Returns 0, or 1 when a check failed.
// `store`: the job's store under this repetition's prefix (harness/job_rank.h); null: a fresh
// rendezvous at MASTER_ADDR:MASTER_PORT.
int RunAsRank(const Scenario& s, const comm::RankEnv& env, const std::string& out_dir,
              const std::function<void(const StepProgress&)>& on_step, c10::intrusive_ptr<c10d::Store> store = {});

// Writes rep_dir/scenario.yaml (what the child ranks run), launches the ranks and waits for
// them. The child ranks are `self_exe run rep_dir/scenario.yaml --out rep_dir [--quiet]`.
LaunchOutcome LaunchRepetition(const Scenario& s, const std::string& rep_dir, const std::string& self_exe, bool quiet,
                               const std::function<void(const StepProgress&)>& on_step);

}  // namespace shardbench
