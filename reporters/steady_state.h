// Where a run's step times settle: the first step of its steady state, from the data rather
// than from a fixed number of warmup steps (allocator caches, lazy kernels and page faults warm
// up at a pace no scenario author can know in advance).
#pragma once

#include <cstdint>
#include <vector>

namespace shardbench {

// The number of leading steps of `step_times` (every step, warmup included) that are not yet
// steady: 0 when none is told apart. The Marginal Standard Error Rule (MSER-5, White 1997)
// proposes a truncation point within the first half; it is trimmed from MSER's batches to
// single steps and kept only when the truncated prefix differs robustly from the rest
// (steady_state.cc says how and why).
int64_t SteadyStateStep(const std::vector<double>& step_times);

}  // namespace shardbench
