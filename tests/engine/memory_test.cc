// The tracking allocator: exact bytes by category for a known allocation pattern, peaks, and
// retagging.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "engine/memory/tracking_allocator.h"

namespace shardbench {
namespace {

using memory::Category;

int64_t Current(const memory::MemoryStats& s, Category c) { return s.by_category.held[c]; }
int64_t Peak(const memory::MemoryStats& s, Category c) { return s.by_category.peak[c]; }
int64_t AtPeak(const memory::MemoryStats& s, Category c) { return s.at_peak[c]; }

TEST(TrackingAllocator, ExactBytesByCategoryAndPeak) {
  memory::InstallTrackingAllocator();
  ASSERT_TRUE(memory::TrackingAllocatorInstalled());
  at::set_num_threads(1);  // no allocations from other threads during the pattern
  const memory::MemoryStats base = memory::Snapshot();
  memory::ResetPeaks();
  {
    memory::ScopedCategory grads(Category::kGrads);
    at::Tensor g = at::empty({1000}, at::kFloat);  // 4000 bytes
    {
      memory::ScopedCategory optim(Category::kOptimState);
      at::Tensor m = at::empty({250}, at::kDouble);  // 2000 bytes, nested scope
      at::Tensor v = at::empty({250}, at::kDouble);  // 2000 bytes
      const auto s = memory::Snapshot();
      EXPECT_EQ(Current(s, Category::kOptimState) - Current(base, Category::kOptimState), 4000);
      EXPECT_EQ(s.current - base.current, 8000);
    }
    const auto s = memory::Snapshot();  // m and v freed
    EXPECT_EQ(s.current - base.current, 4000);
    EXPECT_EQ(s.peak - base.current, 8000);
    EXPECT_EQ(AtPeak(s, Category::kOptimState) - Current(base, Category::kOptimState), 4000);
    EXPECT_EQ(Peak(s, Category::kGrads) - Current(base, Category::kGrads), 4000);
    // Back in kGrads after the nested scope.
    at::Tensor h = at::empty({10}, at::kFloat);
    EXPECT_EQ(Current(memory::Snapshot(), Category::kGrads) - Current(base, Category::kGrads), 4040);
  }
  EXPECT_EQ(memory::Snapshot().current, base.current);
}

TEST(TrackingAllocator, RetagMovesBytesBetweenCategories) {
  memory::InstallTrackingAllocator();
  const memory::MemoryStats base = memory::Snapshot();
  at::Tensor t;
  {
    memory::ScopedCategory act(Category::kActivations);
    t = at::zeros({64}, at::kFloat);  // 256 bytes
  }
  at::Tensor view = t.narrow(0, 0, 8);
  memory::Retag(view, Category::kGrads);  // a view moves its whole storage
  const auto s = memory::Snapshot();
  EXPECT_EQ(Current(s, Category::kGrads) - Current(base, Category::kGrads), 256);
  EXPECT_EQ(Current(s, Category::kActivations) - Current(base, Category::kActivations), 0);
  t = at::Tensor();
  view = at::Tensor();
  EXPECT_EQ(Current(memory::Snapshot(), Category::kGrads), Current(base, Category::kGrads));
  at::Tensor untracked = at::from_blob(new float[4], {4}, [](void* p) { delete[] static_cast<float*>(p); });
  memory::Retag(untracked, Category::kGrads);  // not ours: ignored
  EXPECT_EQ(Current(memory::Snapshot(), Category::kGrads), Current(base, Category::kGrads));
}

}  // namespace
}  // namespace shardbench
