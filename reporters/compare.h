// `shardbench compare BASE CURRENT`: every instance's metrics judged under a gate policy, and
// every check and run status of CURRENT. Pure: results in, a Comparison out; the reporters
// (console, Markdown, JUnit, HTML) render it and the CLI turns it into an exit code.
//
// Sampled metrics (times, throughput) are judged by a test over samples (repetition medians
// by default; Mann-Whitney U or a bootstrap interval of the median ratio) and a minimum effect
// size; exact metrics (bytes, counts) by their exact delta against a tolerance (default 0).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "reporters/gate_policy.h"
#include "reporters/result_set.h"

namespace shardbench {

enum class Verdict { kRegression, kImprovement, kNoChange, kInsufficientData };
const char* VerdictName(Verdict v);  // "regression", "improvement", "no change", "insufficient data"

struct MetricComparison {
  std::string instance, metric, unit, kind, better;
  double base = 0, current = 0;  // medians (sampled) or the largest rank's value (exact)
  double ratio = 1;              // current / base (1 when both are 0)
  Verdict verdict = Verdict::kNoChange;
  size_t base_samples = 0, current_samples = 0;
  std::optional<double> p_value;                 // mann_whitney
  std::optional<double> ci_low, ci_high;         // bootstrap interval of the ratio
  std::string detail;   // how it was judged, in words
  bool gated = true;    // its regression makes the comparison red
  std::string suppressed;  // the suppression's reason, when one applies
  bool red() const { return verdict == Verdict::kRegression && gated && suppressed.empty(); }
};

struct CheckOutcome {
  std::string instance, name, detail;
  bool passed = false;
  bool expected_red = false;  // the suite expects this instance red (a catalog case): not a regression
};

struct Comparison {
  std::string base_source, current_source, policy_source, today;
  std::vector<MetricComparison> metrics;
  std::vector<CheckOutcome> checks;     // CURRENT's checks
  std::vector<std::string> failures;    // red for reasons other than a metric or a check (an instance missing or erroring)
  std::vector<std::string> notes;       // informational: new instances, changed configs, expired suppressions
  int regressions() const;
  int failed_checks() const;
  bool red() const { return regressions() > 0 || failed_checks() > 0 || !failures.empty(); }
  ExitCode exit_code() const { return red() ? ExitCode::kRegression : ExitCode::kOk; }
};

// `today` is YYYY-MM-DD (suppression expiry).
Comparison Compare(const ResultSet& base, const ResultSet& current, const GatePolicy& policy, const std::string& today);

// One metric's samples as a rule reads them (repetition medians or every step).
std::vector<double> SamplesFor(const nlohmann::json& metric, const MetricRule& rule);
// Judges one sampled metric from its samples on both sides.
void JudgeSampled(MetricComparison& c, const std::vector<double>& base, const std::vector<double>& current,
                  const MetricRule& rule);

std::string TodayUtc();

}  // namespace shardbench
