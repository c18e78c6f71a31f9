// How `shardbench compare` judges each metric: a YAML policy file (or the defaults) with a rule
// per metric (glob patterns allowed) and suppressions that carry a reason and an expiry date.
//
//   correction: bh                         # bh | bonferroni | none, over the gated sampled metrics
//   insufficient_data: unjudged            # unjudged (not green) | warn (reported, green)
//   defaults:
//     sampled: {test: mann_whitney, alpha: 0.05, min_effect: 0.03, min_samples: 5, samples: repetitions}
//     exact: {tolerance: 0}
//   metrics:
//     tokens_per_s: {min_effect: 0.05, max_mde: 0.10}   # UNDERPOWERED when it could not catch 10%
//     host_rss_peak: {gate: false}          # reported, never red
//     "comm_*_bytes": {tolerance: 0}
//     comm_overlap_ratio: {at_least: 0.8}   # held absolutely, whatever the base measured
//   suppressions:
//     - {metric: tokens_per_s, instance: "nightly_engines*", reason: "...", expires: 2027-01-31}
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace shardbench {

struct MetricRule {
  // Sampled metrics.
  // signed_rank: launches paired by round (reporters/signed_rank.h), as ci/ab.sh runs them.
  std::string test = "mann_whitney";  // mann_whitney | bootstrap | signed_rank
  double alpha = 0.05;                // mann_whitney, signed_rank: a p-value below it is a change
  double confidence = 0.95;           // bootstrap: the interval's level
  double min_effect = 0.03;           // relative change of the median too small to flag
  int min_samples = 5;                // per side; fewer leaves the metric unjudged
  // Fewer than min_samples: "unjudged" makes the comparison UNJUDGED (not green); "warn" reports
  // it and lets the comparison be green.
  std::string insufficient_data = "unjudged";
  // The widest minimum detectable effect (reporters/power.h) a "no change" may have: a metric
  // that could not have caught a change of this size is UNDERPOWERED (not green).
  std::optional<double> max_mde;
  std::string samples = "repetitions";  // repetitions (one median per launch) | steps (every measured step)
  // Exact metrics: relative change allowed in the worse direction (0: any change is red).
  double tolerance = 0;
  bool gate = true;                   // false: reported, never red
  // Absolute holds on CURRENT's median (sampled) or largest rank (exact), whatever the base
  // was: a value past one is a regression even when the base was just as bad. A ratio that
  // must stay high (comm_overlap_ratio) or a budget that must not be crossed.
  std::optional<double> at_least, at_most;
  std::optional<std::string> better;  // overrides the result's direction (lower | higher)
};

struct Suppression {
  std::string metric = "*";    // glob
  std::string instance = "*";  // glob
  std::string reason;
  std::string expires;         // YYYY-MM-DD; not applied after this day
};

struct GatePolicy {
  std::string source = "(defaults)";
  // Multiple-testing correction over the gated sampled metrics of one comparison
  // (reporters/multiple_testing.h): bh | bonferroni | none.
  std::string correction = "bh";
  MetricRule sampled_defaults, exact_defaults;
  std::vector<std::pair<std::string, std::string>> metric_rules;  // (glob, YAML text) in file order
  std::vector<Suppression> suppressions;
  // `compare --paired` (ci/ab.sh): both sides' launches ran round by round, so every rule that
  // would test launches with Mann-Whitney U tests them paired (signed_rank) instead.
  bool paired = false;

  // The rule for `metric` of `kind` (exact | sampled): the defaults, then every matching entry
  // of `metrics:` in file order.
  MetricRule rule_for(const std::string& metric, const std::string& kind) const;
  // The suppression covering (instance, metric) on `today` (YYYY-MM-DD), if any; an expired
  // one that matches is returned through `expired`.
  const Suppression* suppression_for(const std::string& instance, const std::string& metric, const std::string& today,
                                     const Suppression** expired = nullptr) const;
};

// InputError naming the file, the line and the field for anything unknown or out of range.
GatePolicy LoadGatePolicy(const std::string& path);
GatePolicy DefaultGatePolicy();

bool GlobMatch(const std::string& pattern, const std::string& text);
// YYYY-MM-DD naming a day of the calendar (2027-02-30 is not): suppression expiry and --today
// compare as strings, so a malformed date would expire everything or nothing.
bool IsCalendarDate(const std::string& s);

// A relative change given by a user (max_mde, --max-mde, --target-mde): InputError naming
// `where` unless it is in (0, 10] (0.05 = 5%).
double CheckRelativeChange(double value, const std::string& where);

}  // namespace shardbench
