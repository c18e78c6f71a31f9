#include "reporters/power.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "reporters/signed_rank.h"

namespace shardbench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Sum of squared deviations from the mean.
double SumOfSquares(const std::vector<double>& x) {
  if (x.empty()) return 0;
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return ss;
}

// log C(m + n, m): the number of rank arrangements under the null.
double LogChoose(size_t m, size_t n) {
  return std::lgamma(static_cast<double>(m + n) + 1) - std::lgamma(static_cast<double>(m) + 1) -
         std::lgamma(static_cast<double>(n) + 1);
}

// The smallest two-sided p-value significance.cc's Mann-Whitney test can return: exact null
// distribution (m * n <= 400, no ties): 2 / C(m + n, m); the normal approximation: as small as
// the data make it.
double SmallestMannWhitneyP(size_t m, size_t n) {
  if (m * n > 400) return 0;
  return std::min(1.0, 2 * std::exp(-LogChoose(m, n)));
}

}  // namespace

double NormalQuantile(double p) {
  if (!(p > 0 && p < 1)) return p <= 0 ? -kInf : kInf;
  // Acklam's rational approximation (relative error 1.2e-9), then one Halley step on erfc.
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  const double low = 0.02425;
  double x;
  if (p < low) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - low) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

double StudentQuantile(double p, double df) {
  if (!(df > 0)) return p > 0.5 ? kInf : -kInf;
  // Abramowitz & Stegun 26.7.5.
  const double z = NormalQuantile(p), z2 = z * z;
  const double g1 = (z2 + 1) * z / 4;
  const double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
  const double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
  const double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
  return z + g1 / df + g2 / (df * df) + g3 / (df * df * df) + g4 / (df * df * df * df);
}

double PooledLogSpread(const std::vector<double>& base, const std::vector<double>& current) {
  const size_t df = (base.size() > 1 ? base.size() - 1 : 0) + (current.size() > 1 ? current.size() - 1 : 0);
  if (df == 0) return 0;
  const bool positive = std::all_of(base.begin(), base.end(), [](double v) { return v > 0; }) &&
                        std::all_of(current.begin(), current.end(), [](double v) { return v > 0; });
  if (positive) {
    auto logs = [](const std::vector<double>& x) {
      std::vector<double> out;
      for (double v : x) out.push_back(std::log(v));
      return out;
    };
    return std::sqrt((SumOfSquares(logs(base)) + SumOfSquares(logs(current))) / static_cast<double>(df));
  }
  // Zeros or negative values (a time that was 0 on one launch): the coefficient of variation,
  // which the log spread approximates for small spreads anyway.
  const double sd = std::sqrt((SumOfSquares(base) + SumOfSquares(current)) / static_cast<double>(df));
  double scale = 0;
  for (double v : base) scale += std::abs(v);
  for (double v : current) scale += std::abs(v);
  scale /= static_cast<double>(base.size() + current.size());
  if (scale == 0) return sd == 0 ? 0 : kInf;
  return sd / scale;
}

double MinimumDetectableEffect(double log_spread, size_t m, size_t n, const PowerTest& t) {
  if (m == 0 || n == 0) return kInf;
  const double md = static_cast<double>(m), nd = static_cast<double>(n);
  double scale = std::sqrt(1 / md + 1 / nd);
  double d;
  if (t.test == "bootstrap") {
    d = (NormalQuantile(1 - t.alpha / 2) + NormalQuantile(t.power)) * log_spread * std::sqrt(M_PI / 2) * scale;
  } else if (t.test == "signed_rank") {
    // Pairs: log_spread is the paired differences' spread over sqrt(2) (what one side's spread
    // would be with nothing shared), so scale * log_spread is the differences' spread over
    // sqrt(pairs); the signed-rank test's efficiency against the t-test is 3/pi, as U's.
    const size_t pairs = std::min(m, n);
    if (SmallestSignedRankP(pairs) >= t.alpha) return kInf;
    const double df = static_cast<double>(pairs) - 1;
    scale = std::sqrt(2 / static_cast<double>(pairs));
    d = (StudentQuantile(1 - t.alpha / 2, df) + StudentQuantile(t.power, df)) * log_spread * scale * std::sqrt(M_PI / 3);
  } else {
    if (SmallestMannWhitneyP(m, n) >= t.alpha) return kInf;
    const double df = md + nd - 2;
    d = (StudentQuantile(1 - t.alpha / 2, df) + StudentQuantile(t.power, df)) * log_spread * scale * std::sqrt(M_PI / 3);
  }
  // The observed median ratio must also reach the minimum effect.
  if (t.min_effect > 0) {
    const double observed_spread = log_spread * std::sqrt(M_PI / 2) * scale;
    d = std::max(d, std::log1p(t.min_effect) + NormalQuantile(t.power) * observed_spread);
  }
  return std::expm1(d);
}

std::optional<size_t> SamplesForMde(double log_spread, double target, const PowerTest& t, size_t limit) {
  for (size_t n = 2; n <= limit; ++n) {
    if (MinimumDetectableEffect(log_spread, n, n, t) <= target) return n;
  }
  return std::nullopt;
}

}  // namespace shardbench
