// What `shardbench run <suite|scenario>` does once its arguments are parsed: every instance
// (matrix point) of the target, each repetition a separate launch of its ranks
// (harness/repetition_launch.h), DIR/<instance>.json per instance (its repetitions merged),
// DIR/index.json with each instance's colour against the one expected, and DIR/dashboard.html.
// Inside a job an outside launcher started (torchrun, srun, our --nnodes) every rank runs the
// same target in lockstep (harness/job_rank.h) and rank 0 writes the same directory.
#pragma once

#include <string>

#include "harness/run_request.h"

namespace shardbench {

// The roles a shardbench process plays in a run (docs/architecture.md, "One run, end to end"):
//   launcher         `run` started by a user: resolves the target, launches each repetition's
//                    ranks (harness/repetition_launch.h), merges and writes the results
//   node launcher    `run --nnodes`: starts this node's ranks as torchrun would (harness/node_launch.h)
//   job rank         `run` under an outside launcher (torchrun, srun, our node launcher): runs
//                    the whole target in lockstep with the job's other ranks (harness/job_rank.h)
//   repetition rank  `shardbench rank`: one rank of one repetition our launcher started, the
//                    resolved scenario in, DIR/result.json out (rank 0)
// RunTarget is the first three (by the environment and the flags), RunRepetitionRank the last.
// Both return the process exit code (docs/architecture.md: 0 ok, 1 check failed / unexpected
// colour, 2 bad input, 3 infrastructure).
int RunTarget(const RunRequest& request, const RunDisplay& display, const std::string& self_exe);
// `request.target` is the repetition's resolved scenario file, `request.out_dir` its directory.
int RunRepetitionRank(const RunRequest& request, const RunDisplay& display);

}  // namespace shardbench
