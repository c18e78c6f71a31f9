// `shardbench run <suite|scenario> [--nproc N] [--out DIR] [key=value ...]`: runs every
// instance (matrix point) of the target, each repetition a separate launch of its ranks, and
// writes DIR/<instance>.json per instance plus DIR/index.json.
#pragma once

#include <string>
#include <vector>

namespace shardbench::cli {

struct RunArgs {
  std::string target;                  // suite or scenario: a file or a shipped name
  int nproc = 0;                       // 0: each scenario's world_size
  std::string out_dir;                 // default results/<name>-<timestamp>
  std::vector<std::string> overrides;  // key=value
  bool quiet = false;
  int repetitions = 0;                 // > 0: every instance this many times (a gate's samples)
};

// Returns the process exit code (DESIGN.md: 0 ok, 1 check failed / unexpected colour,
// 2 bad input, 3 infrastructure).
int RunCommand(const RunArgs& args, const std::string& self_exe);

}  // namespace shardbench::cli
