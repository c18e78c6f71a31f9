// Communication/compute overlap from kernel intervals (what CUPTI's activity records give on a
// GPU): communication kernels are recognised by name (NCCL's), every other kernel is compute.
// Exposed communication is the time some communication kernel runs while no compute kernel
// does: the part of the collectives that the step waits for (torchtitan#929: all-gathers that
// stop overlapping). Pure interval arithmetic, testable without a device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardbench::profile {

struct KernelInterval {
  std::string name;
  int64_t stream = 0;
  int64_t start_ns = 0, end_ns = 0;
};

struct OverlapSummary {
  int64_t communication_ns = 0;  // union of communication kernels
  int64_t compute_ns = 0;        // union of compute kernels
  int64_t exposed_ns = 0;        // communication while no compute runs
  // 1 - exposed / communication (1: fully hidden; 0: fully exposed; 1 without communication).
  double overlap_ratio() const {
    return communication_ns > 0 ? 1.0 - static_cast<double>(exposed_ns) / static_cast<double>(communication_ns) : 1.0;
  }
};

bool IsCommunicationKernel(const std::string& name);  // nccl... / Nccl... kernels
OverlapSummary SummarizeOverlap(const std::vector<KernelInterval>& kernels);

}  // namespace shardbench::profile
