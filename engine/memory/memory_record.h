// The one description of a rank's memory: bytes by category, held now and at their peak. The
// tracking allocator, the engines, the memory model, the rank record and the result JSON all
// speak it, under the same category names (CategoryName; docs/architecture.md, "The memory
// record").
#pragma once

#include <c10/core/ScalarType.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>

namespace shardbench::memory {

enum class Category : int {
  kParamsSharded = 0,
  kParamsUnsharded,
  kGrads,
  kOptimState,
  kActivations,
  kCommBuffers,
  kOther,
  kCount
};
constexpr size_t kCategories = static_cast<size_t>(Category::kCount);
// The name results use for `c` (its JSON key everywhere).
const char* CategoryName(Category c);
constexpr Category CategoryAt(size_t i) { return static_cast<Category>(i); }

// What an engine keeps between steps: the categories results report as `held`.
inline constexpr std::array<Category, 4> kHeldBetweenSteps{Category::kParamsSharded, Category::kParamsUnsharded,
                                                           Category::kGrads, Category::kOptimState};

// Bytes per category.
struct CategoryBytes {
  std::array<int64_t, kCategories> bytes{};

  int64_t& operator[](Category c) { return bytes[static_cast<size_t>(c)]; }
  int64_t operator[](Category c) const { return bytes[static_cast<size_t>(c)]; }
  int64_t total() const;
};

// held[c]: bytes of c alive now (for an engine: between steps, from its tensors). peak[c]: the
// most bytes of c alive at once since the last peak reset, as far as the source sees them. The
// allocator sees every tensor. An engine's gauges see what it allocates and frees within a step:
// the gathered parameters (peak[kParamsUnsharded]) and the full gradients before their
// reduce-scatter (peak[kGrads]); the gradient shards it keeps are held[kGrads]. A source leaves
// the categories it does not see at 0.
struct MemoryRecord {
  CategoryBytes held;
  CategoryBytes peak;
  std::map<c10::ScalarType, int64_t> params_by_dtype;  // parameters held, by stored dtype
};

}  // namespace shardbench::memory
