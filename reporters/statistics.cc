#include "reporters/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace shardbench {

double Percentile(std::vector<double> s, double q) {
  if (s.empty()) throw std::invalid_argument("percentile of no samples");
  std::sort(s.begin(), s.end());
  const double pos = q / 100.0 * static_cast<double>(s.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
}

Summary Summarize(const std::vector<double>& samples) {
  Summary out;
  out.n = samples.size();
  if (samples.empty()) return out;
  out.median = Percentile(samples, 50);
  out.p10 = Percentile(samples, 10);
  out.p90 = Percentile(samples, 90);
  out.min = *std::min_element(samples.begin(), samples.end());
  out.max = *std::max_element(samples.begin(), samples.end());
  out.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return out;
}

}  // namespace shardbench
