#include "harness/timing_controls.h"

#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/planted_work.h"

namespace shardbench {

std::string PinToRankCores(int local_rank, int local_world_size) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    throw InfraError(std::string("timing.pin_cores: sched_getaffinity failed: ") + std::strerror(errno));
  }
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cores.push_back(c);
  }
  const int n = static_cast<int>(cores.size());
  if (local_world_size <= 1) return "one rank: all " + std::to_string(n) + " cores";
  // Ranks beyond the cores share them round robin; otherwise each gets n / ranks of them.
  const int per_rank = std::max(1, n / local_world_size);
  const int first = (local_rank * per_rank) % n;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  for (int i = 0; i < per_rank; ++i) CPU_SET(cores[(first + i) % n], &mine);
  if (sched_setaffinity(0, sizeof(mine), &mine) != 0) {
    throw InfraError(std::string("timing.pin_cores: sched_setaffinity failed: ") + std::strerror(errno));
  }
  std::string which = "core " + std::to_string(cores[first]);
  if (per_rank > 1)
    which = "cores " + std::to_string(cores[first]) + "-" + std::to_string(cores[(first + per_rank - 1) % n]);
  return which + " of " + std::to_string(n);
}

double TimeCalibrationKernel() {
  const auto start = std::chrono::steady_clock::now();
  PlantedWork(kCalibrationIterations);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace shardbench
