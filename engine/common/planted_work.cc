#include "engine/common/planted_work.h"

#include "engine/common/failpoints.h"

namespace shardbench {
namespace {

// Collective calls per step of the reference instance (smoke at world size 2: two gradient
// buckets and the loss, all-reduced): slow_collectives_*pct spreads its share over them.
constexpr int64_t kReferenceCollectivesPerStep = 3;

double ActiveFraction(const char* five, const char* ten, const char* twenty) {
  return FailpointActive(twenty) ? 0.20 : FailpointActive(ten) ? 0.10 : FailpointActive(five) ? 0.05 : 0.0;
}

}  // namespace

void PlantedWork(int64_t iterations) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < iterations; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  // A volatile store the optimiser must keep, so the chain above is computed.
  static volatile uint64_t sink;
  sink = x;
}

int64_t PlantedOptimizerIterations() {
  const double f = ActiveFraction("slow_optimizer_5pct", "slow_optimizer_10pct", "slow_optimizer_20pct");
  return static_cast<int64_t>(f * static_cast<double>(kReferenceStepIterations));
}

int64_t PlantedCollectiveIterations() {
  const double f = ActiveFraction("slow_collectives_5pct", "slow_collectives_10pct", "slow_collectives_20pct");
  return static_cast<int64_t>(f * static_cast<double>(kReferenceStepIterations) / kReferenceCollectivesPerStep);
}

}  // namespace shardbench
