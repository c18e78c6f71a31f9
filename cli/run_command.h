// `shardbench run <suite|scenario> [--nproc N] [--out DIR] [key=value ...]`: runs every
// instance (matrix point) of the target, each repetition a separate launch of its ranks, and
// writes DIR/<instance>.json per instance plus DIR/index.json.
#pragma once

#include <optional>
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
  // --repetitions auto[:MAX] --target-mde X [--policy F]: launches of each instance until the
  // policy's gated sampled metrics could catch X (reporters/adaptive_repetitions.h), at most MAX.
  std::optional<int> auto_max;
  std::optional<double> target_mde;
  std::string policy;                  // empty: the default gate policy
};

// Returns the process exit code (DESIGN.md: 0 ok, 1 check failed / unexpected colour,
// 2 bad input, 3 infrastructure).
int RunCommand(const RunArgs& args, const std::string& self_exe);

}  // namespace shardbench::cli
