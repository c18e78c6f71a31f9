// What `shardbench run <suite|scenario>` does once its arguments are parsed: every instance
// (matrix point) of the target, each repetition a separate launch of its ranks
// (harness/repetition_launch.h), DIR/<instance>.json per instance (its repetitions merged),
// DIR/index.json with each instance's colour against the one expected, and DIR/dashboard.html.
// Inside a job (launched by us, torchrun or srun) it runs this process's rank instead.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario_runner.h"

namespace shardbench {

struct RunRequest {
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

// What the command line shows of a run (unless quiet); the harness writes the files.
struct RunDisplay {
  std::function<void(const StepProgress&)> on_step;                                // rank 0, every step
  std::function<void(const nlohmann::json& result, const std::string& path)> on_instance;  // merged result
  std::function<void(const nlohmann::json& index, const std::string& out_dir)> on_index;   // at the end
};

// green: every check passed; red: a check failed; error: it could not run (bad input such as
// a combination the engine refuses, or infrastructure).
std::string Colour(const std::string& status);

// Returns the process exit code (docs/architecture.md: 0 ok, 1 check failed / unexpected colour,
// 2 bad input, 3 infrastructure).
int RunTarget(const RunRequest& request, const RunDisplay& display, const std::string& self_exe);

}  // namespace shardbench
