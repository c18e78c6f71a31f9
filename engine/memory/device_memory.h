// The CUDA caching allocator's own statistics for one device: peak allocated and reserved,
// allocation retries and OOMs, reset at the end of warmup. Compiled whenever the GPU path is;
// without it (or for a CPU scenario) there is nothing to read.
#pragma once

#include <cstdint>
#include <optional>

namespace shardbench::memory {

struct DeviceMemoryStats {
  int64_t allocated_current = 0, allocated_peak = 0;
  int64_t reserved_current = 0, reserved_peak = 0;
  int64_t active_current = 0, active_peak = 0;
  int64_t alloc_retries = 0, ooms = 0;
};

// nullopt when this build has no GPU path.
std::optional<DeviceMemoryStats> ReadDeviceMemory(int device_index);
void ResetDevicePeaks(int device_index);

}  // namespace shardbench::memory
