// `shardbench compare BASE CURRENT`: every instance's metrics judged under a gate policy, and
// every check and run status of CURRENT. Pure: results in, a Comparison out; the reporters
// (console, Markdown, JUnit, HTML) render it and the CLI turns it into an exit code.
//
// Sampled metrics (times, throughput) are judged by a test over samples (repetition medians
// by default; Mann-Whitney U or a bootstrap interval of the median ratio), its p-value adjusted
// over every gated sampled metric of the comparison (reporters/multiple_testing.h), and a
// minimum effect size; each carries the minimum detectable effect of its test
// (reporters/power.h). Exact metrics (bytes, counts) are judged by their exact delta against a
// tolerance (default 0).
//
// The comparison's colour is never GREEN on what it did not judge:
//   RED           a gated regression, a failed check, or an instance missing or unable to run;
//   UNJUDGED      a gated sampled metric had too few samples (policy insufficient_data: warn
//                 reports it instead);
//   UNDERPOWERED  a gated "no change" whose minimum detectable effect is wider than the
//                 policy's max_mde, or infinite (no outcome of so few samples is significant
//                 at the corrected level): the gate could not have caught what it is asked to;
//   GREEN         everything gated was judged, nothing regressed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "reporters/gate_policy.h"
#include "reporters/result_set.h"

namespace shardbench {

enum class Verdict { kRegression, kImprovement, kNoChange, kUnjudged, kUnderpowered };
const char* VerdictName(Verdict v);  // "regression", "improvement", "no change", "unjudged", "underpowered"

struct MetricComparison {
  std::string instance, metric, unit, kind, better;
  double base = 0, current = 0;  // medians (sampled) or the largest rank's value (exact)
  double ratio = 1;              // current / base (1 when both are 0)
  Verdict verdict = Verdict::kNoChange;
  size_t base_samples = 0, current_samples = 0;
  std::optional<double> p_value;                 // the test's own (two-sided)
  std::optional<double> p_adjusted;              // after the family's correction
  std::optional<double> ci_low, ci_high;         // bootstrap interval of the ratio
  double log_spread = 0;                         // pooled spread of log(samples) (reporters/power.h)
  std::optional<double> mde;                     // minimum detectable effect, relative (may be +inf)
  std::optional<size_t> samples_for_max_mde;     // underpowered: samples per side that would reach max_mde (or judge at all)
  std::string detail;   // how it was judged, in words
  bool gated = true;    // its regression makes the comparison red
  bool warn_only = false;  // unjudged, but the policy says insufficient_data: warn
  std::string suppressed;  // the suppression's reason, when one applies
  bool red() const { return verdict == Verdict::kRegression && gated && suppressed.empty(); }
  bool blocks_green() const {
    return red() || (gated && ((verdict == Verdict::kUnjudged && !warn_only) || verdict == Verdict::kUnderpowered));
  }
};

struct CheckOutcome {
  std::string instance, name, detail;
  bool passed = false;
  bool expected_red = false;  // the suite expects this instance red (a catalog case): not a regression
};

struct Comparison {
  std::string base_source, current_source, policy_source, today;
  std::string correction = "bh";  // over the family of gated, judged sampled metrics
  size_t family_size = 0;
  std::vector<MetricComparison> metrics;
  std::vector<CheckOutcome> checks;     // CURRENT's checks
  std::vector<std::string> failures;    // red for reasons other than a metric or a check (an instance missing or erroring)
  // CURRENT's instances whose peer libraries warned (PyTorch's FSDP1 gradient-memory warning...),
  // folded (reporters/peer_warnings.h): often the first sign of what a metric then shows.
  std::vector<std::pair<std::string, std::vector<std::string>>> peer_warnings;
  std::vector<std::string> notes;       // informational: new instances, changed versions, expired suppressions
  // Instances whose two sides ran different scenarios, each with its differences ("lora.r 16 ->
  // 32"): their metrics moved with the change (reports group them under it).
  std::vector<std::pair<std::string, std::vector<std::string>>> scenario_changes;
  const std::vector<std::string>* scenario_change(const std::string& instance) const;
  double seconds = 0;                   // wall time Compare took to judge (JUnit's suite time)
  int regressions() const;
  int failed_checks() const;
  int unjudged() const;      // gated metrics with too few samples that keep it from green
  int warned() const;        // unjudged, reported only (insufficient_data: warn)
  int underpowered() const;
  bool red() const { return regressions() > 0 || failed_checks() > 0 || !failures.empty(); }
  // "RED" | "UNJUDGED" | "UNDERPOWERED" | "GREEN" (in that precedence).
  std::string colour() const;
  bool green() const { return colour() == "GREEN"; }
  ExitCode exit_code() const { return green() ? ExitCode::kOk : ExitCode::kRegression; }
};

// `today` is YYYY-MM-DD (suppression expiry).
Comparison Compare(const ResultSet& base, const ResultSet& current, const GatePolicy& policy, const std::string& today);

std::string TodayUtc();

}  // namespace shardbench
