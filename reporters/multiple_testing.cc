#include "reporters/multiple_testing.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace shardbench {

std::vector<double> AdjustPValues(const std::vector<double>& p, const std::string& correction) {
  const double k = static_cast<double>(p.size());
  std::vector<double> out(p);
  if (correction == "none") return out;
  if (correction == "bonferroni") {
    for (double& q : out) q = std::min(1.0, q * k);
    return out;
  }
  if (correction != "bh") throw std::invalid_argument("unknown multiple-testing correction '" + correction + "'");
  // Step-up: the i-th smallest p-value becomes min over j >= i of p_(j) * k / j.
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  double running = 1;
  for (size_t i = order.size(); i-- > 0;) {
    running = std::min(running, p[order[i]] * k / static_cast<double>(i + 1));
    out[order[i]] = std::min(1.0, running);
  }
  return out;
}

double LoneEffectAlpha(double alpha, size_t k, const std::string& correction) {
  if (correction == "none" || k <= 1) return alpha;
  return alpha / static_cast<double>(k);
}

}  // namespace shardbench
