#include "reporters/change_points.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "reporters/splitmix.h"

namespace shardbench {
namespace {

struct Split {
  size_t at = 0;
  double q = -1;
};

// The best split of x (every split leaving min_segment points each side), O(n^2) from prefix
// sums of pairwise distances: n is a nightly history (hundreds of points at most).
Split BestSplit(const std::vector<double>& x, size_t min_segment) {
  const size_t n = x.size();
  Split best;
  if (n < 2 * min_segment) return best;
  // d[i][j] = |x_i - x_j|; within[t] = sum over pairs inside [0, t), tail[t] = inside [t, n).
  std::vector<double> within(n + 1, 0), tail(n + 1, 0);
  for (size_t t = 1; t <= n; ++t) {
    within[t] = within[t - 1];
    for (size_t i = 0; i + 1 < t; ++i) within[t] += std::abs(x[t - 1] - x[i]);
  }
  for (size_t t = n; t-- > 0;) {
    tail[t] = tail[t + 1];
    for (size_t j = t + 1; j < n; ++j) tail[t] += std::abs(x[t] - x[j]);
  }
  const double total = within[n];
  for (size_t t = min_segment; t + min_segment <= n; ++t) {
    const double a = static_cast<double>(t), b = static_cast<double>(n - t);
    const double between = total - within[t] - tail[t];  // pairs across the split
    const double q = a * b / static_cast<double>(n) *
                     (2 * between / (a * b) - within[t] / (a * (a - 1) / 2) - tail[t] / (b * (b - 1) / 2));
    if (q > best.q) best = {t, q};
  }
  return best;
}

double Mean(const std::vector<double>& x, size_t begin, size_t end) {
  return std::accumulate(x.begin() + static_cast<long>(begin), x.begin() + static_cast<long>(end), 0.0) /
         static_cast<double>(end - begin);
}

void Segment(const std::vector<double>& x, size_t begin, size_t end, const ChangePointOptions& o, uint64_t& rng,
             std::vector<ChangePoint>& out) {
  const std::vector<double> part(x.begin() + static_cast<long>(begin), x.begin() + static_cast<long>(end));
  const Split best = BestSplit(part, o.min_segment);
  if (best.q <= 0) return;
  int as_large = 0;
  std::vector<double> shuffled(part);
  for (int p = 0; p < o.permutations; ++p) {
    for (size_t i = shuffled.size(); i > 1; --i) std::swap(shuffled[i - 1], shuffled[SplitMix64(rng) % i]);  // Fisher-Yates
    if (BestSplit(shuffled, o.min_segment).q >= best.q) ++as_large;
  }
  const double p_value = static_cast<double>(as_large + 1) / static_cast<double>(o.permutations + 1);
  if (p_value >= o.alpha) return;
  const size_t at = begin + best.at;
  out.push_back({at, Mean(x, begin, at), Mean(x, at, end), p_value, best.q});
  Segment(x, begin, at, o, rng, out);
  Segment(x, at, end, o, rng, out);
}

}  // namespace

std::vector<ChangePoint> DetectChangePoints(const std::vector<double>& series, const ChangePointOptions& options) {
  std::vector<ChangePoint> out;
  uint64_t rng = options.seed;
  Segment(series, 0, series.size(), options, rng, out);
  std::sort(out.begin(), out.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  return out;
}

}  // namespace shardbench
