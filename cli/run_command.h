// `shardbench run <suite|scenario> [--nproc N] [--out DIR] [key=value ...]`: the parsed
// arguments go to the harness (harness/run_target.h), which runs every instance, each
// repetition a separate launch of its ranks, and writes DIR/<instance>.json per instance plus
// DIR/index.json. This command adds what the terminal shows (cli/summary.h).
#pragma once

#include <string>

#include "harness/run_target.h"

namespace shardbench::cli {

using RunArgs = RunRequest;

// Returns the process exit code (docs/architecture.md: 0 ok, 1 check failed / unexpected colour,
// 2 bad input, 3 infrastructure).
int RunCommand(const RunArgs& args, const std::string& self_exe);
// `shardbench rank`: one rank of one repetition our launcher started (harness/run_target.h).
int RankCommand(const RunArgs& args);

}  // namespace shardbench::cli
