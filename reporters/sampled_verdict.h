// One sampled metric judged (compare's phases for times and throughput): its samples as the
// policy's rule reads them, the test (Mann-Whitney U, a bootstrap interval, or Wilcoxon's
// signed-rank test over launches paired by round), then the verdict with its minimum detectable
// effect. reporters/compare.h runs these over every instance and corrects the family.
#pragma once

#include <string>
#include <vector>

#include "reporters/compare.h"
#include "reporters/gate_policy.h"
#include "reporters/results_reader.h"

namespace shardbench {

// current / base (1 when both are 0, +infinity when only the base is).
double ChangeRatio(double base, double current);
// A change of this sign is worse for a metric where `better` (lower | higher) is better.
bool IsWorse(const std::string& better, double ratio_or_delta_sign);

// One metric's samples as a rule reads them (repetition medians or every step; a paired rule
// keeps a missing launch's place as NaN).
std::vector<double> SamplesFor(const StoredMetric& metric, const MetricRule& rule);
// Phase one of judging a sampled metric: medians, ratio, interval, the test's p-value and the
// spread, from its samples on both sides (unjudged when either side has fewer than min_samples,
// or, paired, when the sides' launches do not pair: different counts, or `unpairable` says why).
void MeasureSampled(MetricComparison& c, std::vector<double> base, std::vector<double> current, const MetricRule& rule,
                    std::string unpairable = "");
// Phase two: the verdict from `p` (the adjusted p-value) and the minimum detectable effect at
// the per-test level `mde_alpha` (reporters/multiple_testing.h LoneEffectAlpha).
void DecideSampled(MetricComparison& c, const MetricRule& rule, double p, double mde_alpha);
// Both phases for one metric on its own (no family to correct over).
void JudgeSampled(MetricComparison& c, const std::vector<double>& base, const std::vector<double>& current,
                  const MetricRule& rule);
// The level a rule's test is judged at: alpha (mann_whitney) or 1 - confidence (bootstrap).
double TestLevel(const MetricRule& rule);

// Why a paired rule cannot pair these sides' launches, or "" when it can (or the rule is not
// paired): a launch that reported no value at all for the metric (not even null) has lost its
// place, and the rounds after it would pair wrongly.
std::string UnpairableLaunches(const std::string& metric, const MetricRule& rule, const StoredResult& base,
                               size_t base_samples, const StoredResult& current, size_t current_samples);

}  // namespace shardbench
