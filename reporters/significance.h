// Tests of "did this metric change?" over two sets of repetition samples, as regression tools
// use them (Google Benchmark's compare.py: Mann-Whitney U; Bencher/criterion: bootstrap
// confidence intervals). Deterministic: the same samples give the same answer on every run.
#pragma once

#include <cstdint>
#include <vector>

namespace shardbench {

struct MannWhitneyResult {
  double u = 0;          // U of the first sample
  double p_value = 1;    // two-sided
  bool exact = false;    // exact null distribution (no ties, small samples) or normal approximation
};

// Midranks of `values` (ties share the mean of their ranks, 1-based) and the tie term
// sum(t^3 - t) over groups of t equal values: the ranks of the rank tests.
std::vector<double> MidRanks(const std::vector<double>& values, double* tie_term);

// Two-sided p-value of an exact test from its null distribution's counts (counts[k]: the
// arrangements giving statistic k): twice the smaller tail at `statistic`, at most 1.
double TwoSidedExactP(const std::vector<double>& counts, double statistic);

// Two-sided Mann-Whitney U test of `a` against `b`. Exact null distribution when there are no
// ties and both samples are small (m * n <= 400); otherwise the normal approximation with tie
// and continuity corrections (scipy.stats.mannwhitneyu's "asymptotic" method).
MannWhitneyResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);

struct RatioInterval {
  double ratio = 1;  // median(current) / median(base)
  double low = 1, high = 1;
  // Two-sided bootstrap p-value of "no change": twice the smaller share of resampled ratios on
  // either side of 1 (ties counted on both), with the +1 of Davison & Hinkley so it is never 0.
  double p_value = 1;
};

// Percentile-bootstrap confidence interval of median(current) / median(base): `resamples`
// resamplings of each side with replacement, drawn from a fixed-seed generator.
RatioInterval BootstrapMedianRatio(const std::vector<double>& base, const std::vector<double>& current,
                                   double confidence = 0.95, int resamples = 2000, uint64_t seed = 0x5eedULL);

}  // namespace shardbench
