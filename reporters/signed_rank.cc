#include "reporters/signed_rank.h"

#include <algorithm>
#include <cmath>

#include "reporters/significance.h"
#include "reporters/statistics.h"

namespace shardbench {
namespace {

// Number of subsets of {1..n} with each rank sum (0..n(n+1)/2): the null distribution of W+.
std::vector<double> ExactWCounts(size_t n) {
  const size_t top = n * (n + 1) / 2;
  std::vector<double> counts(top + 1, 0.0);
  counts[0] = 1;
  for (size_t rank = 1; rank <= n; ++rank) {
    for (size_t w = top; w >= rank; --w) counts[w] += counts[w - rank];
  }
  return counts;
}

}  // namespace

double HodgesLehmann(const std::vector<double>& differences) {
  std::vector<double> means;
  for (size_t i = 0; i < differences.size(); ++i) {
    for (size_t j = i; j < differences.size(); ++j) means.push_back(0.5 * (differences[i] + differences[j]));
  }
  return means.empty() ? 0.0 : Percentile(means, 50);
}

double SmallestSignedRankP(size_t n) {
  return n == 0 ? 1.0 : std::min(1.0, 2.0 / std::pow(2.0, static_cast<double>(n)));
}

SignedRankResult WilcoxonSignedRank(const std::vector<double>& differences) {
  std::vector<double> d;
  for (double x : differences) {
    if (x != 0 && !std::isnan(x)) d.push_back(x);
  }
  SignedRankResult r;
  r.pairs = d.size();
  if (d.empty()) return r;
  std::vector<double> magnitudes;
  for (double x : d) magnitudes.push_back(std::abs(x));
  double tie_term = 0;
  const std::vector<double> ranks = MidRanks(magnitudes, &tie_term);
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] > 0) r.w_plus += ranks[i];
  }
  const double n = static_cast<double>(d.size());
  const double mean = n * (n + 1) / 4;
  if (tie_term == 0 && d.size() <= 25) {
    r.p_value = TwoSidedExactP(ExactWCounts(d.size()), r.w_plus);
    r.exact = true;
    return r;
  }
  const double variance = n * (n + 1) * (2 * n + 1) / 24 - tie_term / 48;
  if (variance <= 0) return r;
  const double z = std::max(0.0, std::abs(r.w_plus - mean) - 0.5) / std::sqrt(variance);
  r.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return r;
}

}  // namespace shardbench
