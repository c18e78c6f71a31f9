// `shardbench compare BASE CURRENT`: judge CURRENT against BASE under a gate policy, print the
// console report and write the requested report files; the exit code is the gate's.
#pragma once

#include <optional>
#include <string>

namespace shardbench::cli {

struct CompareArgs {
  std::string base, current;
  std::string policy;                  // YAML file; empty: the defaults
  std::string markdown, junit, html;   // output files (empty: not written)
  std::string today;                   // YYYY-MM-DD for suppression expiry (empty: today, UTC)
  std::string history;                 // a history directory whose trends the dashboard shows too
  bool quiet = false;
  // Overrides the policy's sampled default max_mde (ci/ab.sh: "confident" means this narrow).
  std::optional<double> max_mde;
  // Both sides' launches ran round by round (ci/ab.sh): test launches paired (GatePolicy::paired).
  bool paired = false;
  // Engines side by side: pair the instances of BASE (and CURRENT, when given) that ran the same
  // scenario on two engines (reporters/engine_pairs.h) instead of judging CURRENT against BASE.
  bool engines = false;
};

int CompareCommand(const CompareArgs& args);

// `shardbench history DIR`: change points of every (instance, metric) series over the runs
// in DIR (one results directory or file per run).
struct HistoryArgs {
  std::string dir;
  std::string instance = "*", metric = "*";  // globs
  std::string markdown, html;
  std::string policy;  // whose thresholds the page draws; empty: the defaults
};

int HistoryCommand(const HistoryArgs& args);

}  // namespace shardbench::cli
