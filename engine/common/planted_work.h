// Deterministic CPU work for the planted slowdowns of engine/common/failpoints.h
// (slow_optimizer_*pct inside AdamW's step, slow_collectives_*pct on the communication
// library's thread): what ci/gate-quality.sh plants to measure whether the gate catches a
// CPU-bound regression in an engine's own path, not just a longer step loop.
#pragma once

#include <cstdint>

namespace shardbench {

// A chain of dependent integer multiply-adds the compiler can neither drop nor vectorise: the
// same instructions every run (valgrind counts exactly them), and about the same time on a core
// (so wall time sees it too).
void PlantedWork(int64_t iterations);

// The iterations that take about one step of the reference instance on the CI runner: smoke
// (tiny LoRA, reference engine) at world size 2 on the 2-core VM, 2026-12-06: a step of
// 14.6-16.5 ms (3 launches), the chain 1.3-1.5 ns an iteration (4 instructions). The effects
// measured are in README "Gate quality". A failpoint's "5pct" is 5% of that
// step, spread over the place it acts; on another instance the same work is a different share
// of its step, which ci/gate-quality.sh measures instead of assuming.
inline constexpr int64_t kReferenceStepIterations = 10'000'000;

// The iterations the active slow_optimizer_*pct (slow_collectives_*pct) failpoint plants per
// call: 0 when none is active.
int64_t PlantedOptimizerIterations();
int64_t PlantedCollectiveIterations();

}  // namespace shardbench
