// The scenario's timing block (harness/scenario/scenario.h, TimingConfig): pinning a rank to
// its share of the cores, and the calibration kernel timed after every step.
#pragma once

#include <cstdint>
#include <string>

namespace shardbench {

// Iterations of the calibration kernel: ~0.3 ms on the CI VM, 2% of a tiny step.
inline constexpr int64_t kCalibrationIterations = 200'000;

// Restricts this thread (and the threads it starts later) to local rank `local_rank`'s share
// of the cores this process may use: local_world_size ranks split them in order. Returns what
// it did ("cores 2-3 of 0-7"), or why it did nothing ("one rank: all 8 cores"). InfraError when
// the kernel refuses.
std::string PinToRankCores(int local_rank, int local_world_size);

// Seconds the calibration kernel took, run now on this thread.
double TimeCalibrationKernel();

}  // namespace shardbench
