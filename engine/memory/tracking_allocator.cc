#include "engine/memory/tracking_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace shardbench::memory {
namespace {

thread_local Category t_category = Category::kOther;

class Accounts {
 public:
  void add(Category c, int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    s_.current += n;
    auto& held = s_.by_category.held;
    held[c] += n;
    s_.by_category.peak[c] = std::max(s_.by_category.peak[c], held[c]);
    if (s_.current > s_.peak) {
      s_.peak = s_.current;
      s_.at_peak = held;
    }
  }
  void sub(Category c, int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    s_.current -= n;
    s_.by_category.held[c] -= n;
  }
  MemoryStats snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    return s_;
  }
  void reset_peaks() {
    std::lock_guard<std::mutex> lock(mu_);
    s_.peak = s_.current;
    s_.by_category.peak = s_.by_category.held;
    s_.at_peak = s_.by_category.held;
  }
  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  MemoryStats s_;
};

Accounts& TheAccounts() {
  static Accounts* a = new Accounts();  // never destroyed: tensors may be freed at exit
  return *a;
}

// The real allocation behind each pointer we handed out. Our DataPtrs carry the data pointer
// as their context too (c10's raw_allocate, used by oneDNN's bf16 kernels, requires that), so
// the bookkeeping lives in a map keyed by that pointer.
struct Record {
  c10::DataPtr inner;
  int64_t bytes;
  Category category;
};

class Records {
 public:
  void insert(void* p, Record r) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.emplace(p, std::move(r));
  }
  // Removes and returns the record (its DataPtr frees the memory when it goes out of scope).
  Record take(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(p);
    Record r = std::move(it->second);
    map_.erase(it);
    return r;
  }
  void retag(void* p, Category c) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(p);
    if (it == map_.end() || it->second.category == c) return;
    TheAccounts().sub(it->second.category, it->second.bytes);
    it->second.category = c;
    TheAccounts().add(c, it->second.bytes);
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, Record> map_;
};

Records& TheRecords() {
  static Records* r = new Records();  // never destroyed, like the accounts
  return *r;
}

void DeleteRecord(void* ptr) {
  Record r = TheRecords().take(ptr);
  TheAccounts().sub(r.category, r.bytes);
}

class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr inner = base_->allocate(n);
    void* data = inner.get();
    if (data == nullptr) return inner;  // zero bytes: nothing to count
    const Category c = t_category;
    TheAccounts().add(c, static_cast<int64_t>(n));
    TheRecords().insert(data, Record{std::move(inner), static_cast<int64_t>(n), c});
    return {data, data, &DeleteRecord, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &DeleteRecord; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

 private:
  c10::Allocator* base_;
};

TrackingAllocator* g_installed = nullptr;

}  // namespace

ScopedCategory::ScopedCategory(Category c) : previous_(t_category) { t_category = c; }
ScopedCategory::~ScopedCategory() { t_category = previous_; }

void InstallTrackingAllocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_installed = new TrackingAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(g_installed, /*priority=*/100);
  });
}

bool TrackingAllocatorInstalled() { return g_installed != nullptr && c10::GetCPUAllocator() == g_installed; }

MemoryStats Snapshot() { return TheAccounts().snapshot(); }

void ResetPeaks() { TheAccounts().reset_peaks(); }

void Retag(const at::Tensor& t, Category c) {
  if (!t.defined() || !t.has_storage()) return;
  const c10::DataPtr& dp = t.storage().data_ptr();
  if (dp.get_deleter() != &DeleteRecord) return;
  TheRecords().retag(dp.get(), c);
}

MemoryStats MaxPeaks(const MemoryStats& earlier, const MemoryStats& later) {
  MemoryStats out = later;
  if (earlier.peak > later.peak) {
    out.peak = earlier.peak;
    out.at_peak = earlier.at_peak;
  }
  for (size_t i = 0; i < kCategories; ++i) {
    const Category c = CategoryAt(i);
    out.by_category.peak[c] = std::max(earlier.by_category.peak[c], later.by_category.peak[c]);
  }
  return out;
}

}  // namespace shardbench::memory
