#include "reporters/steady_state.h"

#include <cmath>
#include <limits>

#include "reporters/statistics.h"

namespace shardbench {
namespace {

// Batches of 5 (MSER-5) smooth single-step noise on long series; a short series has too few
// batches for that, so its steps are judged one by one.
constexpr int64_t kBatch = 5;
constexpr size_t kMinStepsForBatches = 25;
// A prefix is warmup only when it sits this many robust standard deviations (1.4826 x MAD:
// the standard deviation for normal noise, undisturbed by outliers) away from the rest.
constexpr double kRobustSigmas = 3.0;

// MSER's truncation point in batches: argmin over d <= k/2 of the variance of the mean of the
// batches left, sum (y_j - mean_d)^2 / (k - d)^2. Ties go to the smaller d.
int64_t MserBatches(const std::vector<double>& y) {
  const int64_t k = static_cast<int64_t>(y.size());
  int64_t best_d = 0;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t d = 0; d <= k / 2 && k - d >= 2; ++d) {
    double mean = 0;
    for (int64_t j = d; j < k; ++j) mean += y[j];
    mean /= static_cast<double>(k - d);
    double ss = 0;
    for (int64_t j = d; j < k; ++j) ss += (y[j] - mean) * (y[j] - mean);
    const double stat = ss / static_cast<double>((k - d) * (k - d));
    if (stat < best) best = stat, best_d = d;
  }
  return best_d;
}

}  // namespace

int64_t SteadyStateStep(const std::vector<double>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  if (n < 4) return 0;
  const int64_t m = x.size() >= kMinStepsForBatches ? kBatch : 1;
  std::vector<double> batches;
  for (int64_t b = 0; (b + 1) * m <= n; ++b) {
    double sum = 0;
    for (int64_t i = b * m; i < (b + 1) * m; ++i) sum += x[i];
    batches.push_back(sum / static_cast<double>(m));
  }
  const int64_t cut = MserBatches(batches) * m;
  if (cut == 0) return 0;
  // The band a steady step stays in: robust statistics of the rest (1.4826 x MAD is the
  // standard deviation for normal noise, and a spike in the steady part does not widen it).
  const std::vector<double> rest(x.begin() + cut, x.end());
  const double median = Percentile(rest, 50);
  std::vector<double> deviations;
  for (double v : rest) deviations.push_back(std::abs(v - median));
  const double band = kRobustSigmas * 1.4826 * Percentile(deviations, 50);
  // MSER's point is a whole batch and, on a short series, noisy (it overshoots by a few steps or
  // batches), so it is trimmed to the step: a prefix step is still warming up when it is out of
  // the band and at least halfway from the rest's median to the prefix's mean (a noise step
  // that merely grazes a narrow band is not); the steady state starts after the last warming
  // step up to which warming steps are the majority (a lone spike after steady steps is noise).
  double cut_mean = 0;
  for (int64_t i = 0; i < cut; ++i) cut_mean += x[i];
  const double halfway = 0.5 * std::abs(cut_mean / static_cast<double>(cut) - median);
  int64_t warming = 0, steady_from = 0;
  for (int64_t i = 0; i < cut; ++i) {
    const double off = std::abs(x[i] - median);
    if (off > band && off > halfway && 2 * ++warming >= i + 1) steady_from = i + 1;
  }
  if (steady_from == 0) return 0;
  // MSER alone truncates pure noise too (dropping a few high points always lowers the variance
  // of what is left), so the prefix must differ from the rest beyond the band as a whole.
  double prefix_mean = 0;
  for (int64_t i = 0; i < steady_from; ++i) prefix_mean += x[i];
  prefix_mean /= static_cast<double>(steady_from);
  return std::abs(prefix_mean - median) > band ? steady_from : 0;
}

}  // namespace shardbench
