#include "reporters/significance.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "reporters/splitmix.h"
#include "reporters/statistics.h"

namespace shardbench {
namespace {

// Number of arrangements of m and n items giving each U (0..m*n) under the null:
// f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u).
std::vector<double> ExactUCounts(int m, int n) {
  std::vector<std::vector<std::vector<double>>> f(m + 1, std::vector<std::vector<double>>(n + 1));
  for (int i = 0; i <= m; ++i) {
    for (int j = 0; j <= n; ++j) {
      f[i][j].assign(static_cast<size_t>(i * j + 1), 0.0);
      if (i == 0 || j == 0) {
        f[i][j][0] = 1;
        continue;
      }
      for (int u = 0; u <= i * j; ++u) {
        double c = 0;
        if (u - j >= 0 && u - j <= (i - 1) * j) c += f[i - 1][j][u - j];
        if (u <= i * (j - 1)) c += f[i][j - 1][u];
        f[i][j][u] = c;
      }
    }
  }
  return f[m][n];
}

double ResampledMedian(const std::vector<double>& x, uint64_t& state, std::vector<double>& scratch) {
  scratch.resize(x.size());
  for (auto& v : scratch) v = x[SplitMix64(state) % x.size()];
  return Percentile(scratch, 50);
}

}  // namespace

std::vector<double> MidRanks(const std::vector<double>& pooled, double* tie_term) {
  std::vector<size_t> order(pooled.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return pooled[i] < pooled[j]; });
  std::vector<double> ranks(pooled.size());
  *tie_term = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && pooled[order[j + 1]] == pooled[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + j) + 1.0;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    const double t = static_cast<double>(j - i + 1);
    *tie_term += t * t * t - t;
    i = j + 1;
  }
  return ranks;
}

double TwoSidedExactP(const std::vector<double>& counts, double statistic) {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  const auto at = static_cast<size_t>(std::llround(statistic));
  double below = 0, above = 0;  // P(S <= s), P(S >= s)
  for (size_t k = 0; k < counts.size(); ++k) {
    if (k <= at) below += counts[k];
    if (k >= at) above += counts[k];
  }
  return std::min(1.0, 2 * std::min(below, above) / total);
}

MannWhitneyResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) throw std::invalid_argument("Mann-Whitney U needs samples on both sides");
  const double m = static_cast<double>(a.size()), n = static_cast<double>(b.size());
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  double tie_term = 0;
  const std::vector<double> ranks = MidRanks(pooled, &tie_term);
  const double rank_sum_a = std::accumulate(ranks.begin(), ranks.begin() + static_cast<long>(a.size()), 0.0);
  MannWhitneyResult r;
  r.u = rank_sum_a - m * (m + 1) / 2;
  const double mean = m * n / 2;
  if (tie_term == 0 && m * n <= 400) {
    r.p_value = TwoSidedExactP(ExactUCounts(static_cast<int>(m), static_cast<int>(n)), r.u);
    r.exact = true;
    return r;
  }
  const double N = m + n;
  const double variance = m * n / 12 * ((N + 1) - tie_term / (N * (N - 1)));
  if (variance <= 0) return r;  // every value equal: no evidence of a shift
  const double z = std::max(0.0, std::abs(r.u - mean) - 0.5) / std::sqrt(variance);
  r.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return r;
}

RatioInterval BootstrapMedianRatio(const std::vector<double>& base, const std::vector<double>& current,
                                   double confidence, int resamples, uint64_t seed) {
  if (base.empty() || current.empty()) throw std::invalid_argument("bootstrap needs samples on both sides");
  RatioInterval r;
  const double base_median = Percentile(base, 50);
  r.ratio = Percentile(current, 50) / base_median;
  std::vector<double> ratios, scratch;
  ratios.reserve(static_cast<size_t>(resamples));
  uint64_t state = seed;
  int at_most_one = 0, at_least_one = 0;
  for (int i = 0; i < resamples; ++i) {
    const double b = ResampledMedian(base, state, scratch);
    const double c = ResampledMedian(current, state, scratch);
    ratios.push_back(c / b);
    at_most_one += ratios.back() <= 1;
    at_least_one += ratios.back() >= 1;
  }
  r.p_value = std::min(1.0, 2.0 * (std::min(at_most_one, at_least_one) + 1) / (resamples + 1));
  const double tail = (1 - confidence) / 2 * 100;
  r.low = Percentile(ratios, tail);
  r.high = Percentile(ratios, 100 - tail);
  return r;
}

}  // namespace shardbench
