#include "engine/memory/device_memory.h"

#ifdef SHARDBENCH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace shardbench::memory {

std::optional<DeviceMemoryStats> ReadDeviceMemory(int device_index) {
#ifdef SHARDBENCH_WITH_CUDA
  namespace alloc = c10::cuda::CUDACachingAllocator;
  const auto stats = alloc::getDeviceStats(static_cast<c10::DeviceIndex>(device_index));
  constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  DeviceMemoryStats out;
  out.allocated_current = stats.allocated_bytes[kAggregate].current;
  out.allocated_peak = stats.allocated_bytes[kAggregate].peak;
  out.reserved_current = stats.reserved_bytes[kAggregate].current;
  out.reserved_peak = stats.reserved_bytes[kAggregate].peak;
  out.active_current = stats.active_bytes[kAggregate].current;
  out.active_peak = stats.active_bytes[kAggregate].peak;
  out.alloc_retries = stats.num_alloc_retries;
  out.ooms = stats.num_ooms;
  return out;
#else
  (void)device_index;
  return std::nullopt;
#endif
}

void ResetDevicePeaks(int device_index) {
#ifdef SHARDBENCH_WITH_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device_index));
#else
  (void)device_index;
#endif
}

}  // namespace shardbench::memory
