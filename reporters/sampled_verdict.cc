#include "reporters/sampled_verdict.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reporters/format.h"
#include "reporters/power.h"
#include "reporters/signed_rank.h"
#include "reporters/significance.h"
#include "reporters/statistics.h"

namespace shardbench {

double ChangeRatio(double base, double current) {
  if (base == 0) return current == 0 ? 1 : std::numeric_limits<double>::infinity();
  return current / base;
}

bool IsWorse(const std::string& better, double ratio_or_delta_sign) {
  return better == "lower" ? ratio_or_delta_sign > 0 : ratio_or_delta_sign < 0;
}

std::string UnpairableLaunches(const std::string& metric, const MetricRule& rule, const StoredResult& base,
                               size_t base_samples, const StoredResult& current, size_t current_samples) {
  if (rule.test != "signed_rank" || rule.samples != "repetitions") return "";
  // A result that does not say how many launches it holds is taken as it is.
  const auto lost_place = [](const StoredResult& r, size_t samples) {
    return r.repetitions && samples != static_cast<size_t>(*r.repetitions);
  };
  if (!lost_place(base, base_samples) && !lost_place(current, current_samples)) return "";
  return "a launch without " + metric + " on one side (" + std::to_string(base_samples) + " of " +
         std::to_string(base.repetitions.value_or(1)) + " vs " + std::to_string(current_samples) + " of " +
         std::to_string(current.repetitions.value_or(1)) + " launches): its rounds cannot be paired";
}

std::vector<double> SamplesFor(const StoredMetric& metric, const MetricRule& rule) {
  std::vector<double> out;
  // null as written (a non-finite value) is no sample; a paired test keeps its place (a NaN)
  // so that the launches still pair by position, and drops the pair.
  const bool keep_places = rule.test == "signed_rank";
  auto finite = [&](const std::vector<double>& v) {
    for (double x : v) {
      if (!std::isnan(x) || keep_places) out.push_back(x);
    }
  };
  if (rule.samples == "steps") {
    finite(metric.samples);
  } else if (metric.repetition_medians) {
    finite(*metric.repetition_medians);
  } else if (metric.median) {
    out.push_back(*metric.median);  // one launch, one sample
  }
  return out;
}

double TestLevel(const MetricRule& rule) { return rule.test == "bootstrap" ? 1 - rule.confidence : rule.alpha; }

namespace {

std::vector<double> FiniteOnly(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) {
    if (!std::isnan(x)) out.push_back(x);
  }
  return out;
}

// The signed-rank test's pairs: the i-th launch of one side with the i-th of the other (ci/ab.sh
// merges its rounds in the same order on both sides), dropping a pair with a missing or
// non-positive value (a ratio needs both). False with `why` set when the sides cannot pair (a
// `why` given beforehand: the caller knows a launch lost its place).
bool PairLaunches(std::vector<double>& base, std::vector<double>& current, std::string& why) {
  if (why.empty() && base.size() != current.size()) {
    why = "a paired test needs as many launches a side, run round by round (" + std::to_string(base.size()) + " vs " +
          std::to_string(current.size()) + ")";
  }
  if (!why.empty()) return false;
  std::vector<double> b, c;
  for (size_t i = 0; i < base.size(); ++i) {
    if (base[i] > 0 && current[i] > 0) {
      b.push_back(base[i]);
      c.push_back(current[i]);
    }
  }
  base = b;
  current = c;
  return true;
}

void TestPairs(MetricComparison& c, const std::vector<double>& base, const std::vector<double>& current) {
  std::vector<double> diffs;
  for (size_t i = 0; i < base.size(); ++i) diffs.push_back(std::log(current[i]) - std::log(base[i]));
  const SignedRankResult w = WilcoxonSignedRank(diffs);
  c.p_value = w.p_value;
  c.ratio = std::exp(HodgesLehmann(diffs));  // the test's own estimate of the rounds' ratio
  double mean = 0, squares = 0;
  for (double x : diffs) mean += x / static_cast<double>(diffs.size());
  for (double x : diffs) squares += (x - mean) * (x - mean);
  c.log_spread = diffs.size() > 1 ? std::sqrt(squares / static_cast<double>(diffs.size() - 1) / 2) : 0;
  c.detail = "Wilcoxon signed-rank p=" + Fixed(w.p_value, 4) + (w.exact ? " (exact)" : " (normal approx.)") + ", " +
             std::to_string(diffs.size()) + " launches paired by round";
}

}  // namespace

void MeasureSampled(MetricComparison& c, std::vector<double> base, std::vector<double> current, const MetricRule& rule,
                    std::string unpairable) {
  const std::vector<double> base_values = FiniteOnly(base), current_values = FiniteOnly(current);
  c.base_samples = base_values.size();
  c.current_samples = current_values.size();
  c.warn_only = rule.insufficient_data == "warn";
  if (!base_values.empty()) c.base = Percentile(base_values, 50);
  if (!current_values.empty()) c.current = Percentile(current_values, 50);  // an absolute hold reads it even unjudged
  if (base_values.empty() || current_values.empty()) {
    c.verdict = Verdict::kUnjudged;
    c.detail = std::string("no samples on the ") + (base_values.empty() ? "base" : "current") + " side";
    return;
  }
  if (rule.test == "signed_rank") {
    if (!PairLaunches(base, current, unpairable)) {
      c.verdict = Verdict::kUnjudged;
      c.detail = unpairable;
      return;
    }
    c.base_samples = c.current_samples = base.size();
    if (base.empty()) {
      c.verdict = Verdict::kUnjudged;
      c.detail = "no round has a positive value on both sides";
      return;
    }
  } else {
    base = base_values;
    current = current_values;
  }
  c.ratio = ChangeRatio(c.base, c.current);
  c.log_spread = PooledLogSpread(base, current);
  const std::string n = std::to_string(base.size()) + " vs " + std::to_string(current.size()) + " " + rule.samples;
  if (static_cast<int>(std::min(base.size(), current.size())) < rule.min_samples) {
    c.verdict = Verdict::kUnjudged;
    c.detail = n + "; the policy needs " + std::to_string(rule.min_samples) + " per side" +
               (c.warn_only ? " (insufficient_data: warn)" : "");
    return;
  }
  if (rule.test == "signed_rank") return TestPairs(c, base, current);
  // The interval is shown whatever the unpaired test (the "confidence" of a report).
  const RatioInterval ci = BootstrapMedianRatio(base, current, rule.confidence);
  c.ci_low = ci.low;
  c.ci_high = ci.high;
  if (rule.test == "bootstrap") {
    c.p_value = ci.p_value;
    c.detail = "bootstrap " + Fixed(100 * rule.confidence, 0) + "% CI of the median ratio [" + Fixed(ci.low, 3) + ", " +
               Fixed(ci.high, 3) + "], p=" + Fixed(ci.p_value, 4) + ", " + n;
  } else {
    const MannWhitneyResult mw = MannWhitneyU(current, base);
    c.p_value = mw.p_value;
    c.detail = "Mann-Whitney U p=" + Fixed(mw.p_value, 4) + (mw.exact ? " (exact)" : " (normal approx.)") + ", " + n;
  }
}

void DecideSampled(MetricComparison& c, const MetricRule& rule, double p, double mde_alpha) {
  if (!c.p_value) return;  // unjudged in MeasureSampled
  c.p_adjusted = p;
  const double level = TestLevel(rule);
  if (p != *c.p_value) c.detail += "; adjusted p=" + Fixed(p, 4);
  const bool significant = p < level;
  const bool large = std::abs(c.ratio - 1) >= rule.min_effect;
  c.mde = MinimumDetectableEffect(c.log_spread, c.base_samples, c.current_samples,
                                  {rule.test, mde_alpha, rule.min_effect, 0.8});
  if (significant && large) {
    c.verdict = IsWorse(c.better, c.ratio - 1) ? Verdict::kRegression : Verdict::kImprovement;
    return;
  }
  c.verdict = Verdict::kNoChange;
  if (significant) c.detail += "; below the minimum effect " + Fixed(100 * rule.min_effect, 1) + "%";
  if (rule.max_mde && !(*c.mde <= *rule.max_mde)) {
    c.verdict = Verdict::kUnderpowered;
    c.samples_for_max_mde = SamplesForMde(c.log_spread, *rule.max_mde, {rule.test, mde_alpha, rule.min_effect, 0.8});
    c.detail +=
        "; the policy asks to catch " + Fixed(100 * *rule.max_mde, 1) + "% (max_mde): " +
        (c.samples_for_max_mde ? "about " + std::to_string(*c.samples_for_max_mde) + " " + rule.samples +
                                     " a side would reach it at this spread"
                               : "no number of " + rule.samples + " up to 1000 a side reaches it at this spread");
  } else if (std::isinf(*c.mde)) {
    // A test that cannot reach its level whatever the change (the exact Mann-Whitney test at
    // alpha / k for a family of k) judged nothing: never green, max_mde or not.
    c.verdict = Verdict::kUnderpowered;
    c.samples_for_max_mde =
        SamplesForMde(c.log_spread, std::numeric_limits<double>::max(), {rule.test, mde_alpha, rule.min_effect, 0.8});
    c.detail +=
        "; at level " + Fixed(mde_alpha, 6) + " no outcome of " + std::to_string(c.base_samples) + " vs " +
        std::to_string(c.current_samples) + " " + rule.samples + " is significant: " +
        (c.samples_for_max_mde ? "at least " + std::to_string(*c.samples_for_max_mde) + " a side are needed to judge it"
                               : "no number up to 1000 a side would judge it");
  }
}

void JudgeSampled(MetricComparison& c, const std::vector<double>& base, const std::vector<double>& current,
                  const MetricRule& rule) {
  MeasureSampled(c, base, current, rule);
  if (c.p_value) DecideSampled(c, rule, *c.p_value, TestLevel(rule));
}

}  // namespace shardbench
