// Many metrics, one error rate. A comparison of the nightly suite tests dozens of sampled metrics
// at once; at alpha 0.05 each, some would be flagged on every night by chance. The gate adjusts
// the p-values of all the gated sampled metrics of one comparison together (the family):
//   bh          Benjamini-Hochberg (1995): controls the expected share of false alarms among the
//               metrics flagged (and the family-wise rate when nothing changed), the default;
//   bonferroni  p * k: controls the family-wise rate under any dependence, at a price in power;
//   none        each metric on its own.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace shardbench {

// The adjusted p-values, in the order given (each capped at 1).
std::vector<double> AdjustPValues(const std::vector<double>& p_values, const std::string& correction);

// The per-test level at which a single changed metric of a family of k is flagged at `alpha`:
// alpha / k for bh (its first step) and bonferroni, alpha for none. What the minimum detectable
// effect of each metric is computed at (reporters/power.h): honest when one metric moves alone,
// conservative when several move together (bh then flags at up to alpha * j / k).
double LoneEffectAlpha(double alpha, size_t k, const std::string& correction);

}  // namespace shardbench
