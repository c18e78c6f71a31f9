// Exact host memory accounting: a wrapper around c10's CPU allocator (installed with
// c10::SetCPUAllocator) that counts every CPU tensor allocation, current and peak, in the
// memory record's categories (docs/architecture.md). An allocation is attributed to the
// category in force on its thread (ScopedCategory); tensors whose role is known only later
// (a gradient produced inside backward, parameters after wrapping) are moved with Retag. Sizes are exact: what tensors
// asked for, not what malloc rounded them to.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "engine/memory/memory_record.h"

namespace shardbench::memory {

// Allocations on this thread go to `c` while the guard lives (nested guards stack).
class ScopedCategory {
 public:
  explicit ScopedCategory(Category c);
  ~ScopedCategory();
  ScopedCategory(const ScopedCategory&) = delete;
  ScopedCategory& operator=(const ScopedCategory&) = delete;

 private:
  Category previous_;
};

// What the allocator counted: by category (held now, each category's own peak), all categories
// together, and the breakdown at the moment of the overall peak.
struct MemoryStats {
  MemoryRecord by_category;
  int64_t current = 0, peak = 0;
  CategoryBytes at_peak;
};

// Idempotent. Only allocations made after installation are counted.
void InstallTrackingAllocator();
bool TrackingAllocatorInstalled();
MemoryStats Snapshot();
// Peaks restart from the current values (e.g. after warmup).
void ResetPeaks();
// The peaks of two windows combined (`later`'s current values): how a run excludes an
// interval (a checkpoint save) from its peaks by resetting them around it.
MemoryStats MaxPeaks(const MemoryStats& earlier, const MemoryStats& later);
// Moves a tracked tensor's storage bytes to `c` (no-op for untracked or non-CPU storage).
void Retag(const at::Tensor& t, Category c);

}  // namespace shardbench::memory
