#include "harness/grad_blowup.h"

#include <algorithm>

namespace shardbench {

GradBlowup MeasureGradBlowup(const std::vector<RankRecord>& ranks, int64_t trainable_bytes, int world_size) {
  GradBlowup g;
  g.owned = static_cast<double>(trainable_bytes) / world_size;
  if (g.owned <= 0) return g;
  for (const auto& r : ranks) {
    const double held = r.held(memory::Category::kGrads);
    g.worst_bytes = std::max(g.worst_bytes, held);
    g.per_rank.push_back(held / g.owned);
  }
  g.blowup = g.worst_bytes / g.owned;
  return g;
}

}  // namespace shardbench
