// The GPU's kernels as intervals, step by step, for kernel_overlap.h: CUPTI's activity API
// (concurrent-kernel records: start/end on the device clock, stream, name). Compiled in
// whenever CUDA and CUPTI are found; switched on per run (scenario profile.kernel_trace)
// because recording costs a device synchronisation and a buffer flush after each step.
#pragma once

#include <memory>
#include <vector>

#include "engine/profile/kernel_overlap.h"

namespace shardbench::profile {

class KernelTrace {
 public:
  virtual ~KernelTrace() = default;
  // The kernels that finished since the trace began or the last call. Synchronises the
  // device first, so everything a step launched is in.
  virtual std::vector<KernelInterval> collect() = 0;
  // Records CUPTI dropped because its buffers were full (0 in a healthy trace).
  virtual int64_t dropped() const = 0;
};

// Starts tracing this process's kernels. One trace at a time. Throws Error with the reason
// (InputError) when this build has no CUPTI, InfraError when CUPTI refuses (no device, another
// profiler attached).
std::unique_ptr<KernelTrace> StartKernelTrace();

}  // namespace shardbench::profile
