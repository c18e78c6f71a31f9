#include "reporters/adaptive_repetitions.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/common/error.h"
#include "reporters/compare.h"
#include "reporters/sampled_verdict.h"
#include "reporters/multiple_testing.h"
#include "reporters/power.h"

namespace shardbench {
namespace {

std::string Percent(double v) {
  if (!std::isfinite(v)) return "not yet judgeable";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100 * v);
  return buf;
}

// Stopping as soon as the estimated spread allows would stop on a lucky run of alike launches
// (the estimate from 6 launches is often half the truth): the decision uses the spread's upper
// 80% confidence bound instead, s * sqrt((n - 1) / chi2[0.2, n - 1]), the chi-square quantile
// from the Wilson-Hilferty approximation.
double SpreadUpperBound(double spread, size_t n) {
  if (n < 2) return spread;
  const double k = static_cast<double>(n - 1);
  const double c = 1 - 2 / (9 * k) + NormalQuantile(0.2) * std::sqrt(2 / (9 * k));
  return spread * std::sqrt(k / (k * c * c * c));
}

bool GatedSampled(const StoredMetric& metric, const GatePolicy& policy) {
  return metric.kind == "sampled" && policy.rule_for(metric.name, "sampled").gate;
}

}  // namespace

std::optional<int> ParseAutoRepetitions(const std::string& text) {
  if (text == "auto") return 20;
  if (text.rfind("auto:", 0) != 0) return std::nullopt;
  const std::string max = text.substr(5);
  char* end = nullptr;
  const long v = std::strtol(max.c_str(), &end, 10);
  if (max.empty() || *end != '\0' || v < 2 || v > 1000) {
    throw InputError("--repetitions " + text + ": expected auto or auto:MAX with MAX an integer in [2, 1000]");
  }
  return static_cast<int>(v);
}

size_t GatedSampledMetrics(const StoredResult& result, const GatePolicy& policy) {
  size_t n = 0;
  for (const auto& m : result.metrics) n += GatedSampled(m, policy);
  return n;
}

std::string PinStatus::Describe(double target) const {
  if (mde.empty()) return "no gated sampled metric";
  const double widest_mde = mde.at(widest);
  return widest + " could catch " + Percent(widest_mde) + (pinned ? " (the widest) <= " : ", target ") + Percent(target);
}

PinStatus PinnedSoFar(const std::vector<StoredResult>& results, const AdaptiveRepetitions& plan) {
  PinStatus out;
  if (results.empty()) return out;
  out.pinned = true;
  double widest = -1;
  for (const auto& metric : results.front().metrics) {
    if (!GatedSampled(metric, plan.policy)) continue;
    const std::string name = metric.name;
    const MetricRule rule = plan.policy.rule_for(name, "sampled");
    // The samples the comparison will judge: one median per launch, or every step.
    std::vector<double> samples;
    for (const auto& launch : results) {
      for (const auto& m : launch.metrics) {
        if (m.name != name) continue;
        for (double x : SamplesFor(m, rule)) {
          if (!std::isnan(x)) samples.push_back(x);  // a paired rule keeps a missing launch's place
        }
      }
    }
    double mde = std::numeric_limits<double>::infinity();
    if (static_cast<int>(samples.size()) >= rule.min_samples) {
      const double alpha = LoneEffectAlpha(TestLevel(rule), plan.family_size, plan.policy.correction);
      mde = MinimumDetectableEffect(SpreadUpperBound(PooledLogSpread(samples, {}), samples.size()), samples.size(), samples.size(),
                                    {rule.test, alpha, rule.min_effect, 0.8});
    }
    out.mde[name] = mde;
    out.pinned &= mde <= plan.target_mde;
    if (mde > widest || out.widest.empty()) {
      widest = mde;
      out.widest = name;
    }
  }
  return out;
}

}  // namespace shardbench
