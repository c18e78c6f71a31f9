#include "engine/profile/span_recorder.h"

#include <time.h>

#include <utility>

#include "engine/memory/tracking_allocator.h"

namespace shardbench::profile {

int64_t NowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

SpanRecorder& SpanRecorder::Get() {
  static SpanRecorder recorder;
  return recorder;
}

void SpanRecorder::start(bool memory_samples) {
  std::lock_guard<std::mutex> lock(mu_);
  spans_.clear();
  memory_.clear();
  memory_samples_ = memory_samples && memory::TrackingAllocatorInstalled();
  on_ = true;
}

void SpanRecorder::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  on_ = false;
}

void SpanRecorder::sample_memory(int64_t at_ns) {
  const memory::MemoryStats stats = memory::Snapshot();
  MemorySample m;
  m.at_ns = at_ns;
  m.bytes = stats.by_category.held.bytes;
  memory_.push_back(m);
}

void SpanRecorder::add(Span span) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!on_) return;
  if (memory_samples_) sample_memory(span.end_ns);  // the begin was sampled by ScopedSpan
  spans_.push_back(std::move(span));
}

void SpanRecorder::boundary(int64_t at_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (on_ && memory_samples_) sample_memory(at_ns);
}

std::vector<Span> SpanRecorder::take_spans() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(spans_, {});
}

std::vector<MemorySample> SpanRecorder::take_memory() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(memory_, {});
}

ScopedSpan::ScopedSpan(const char* category, const char* name, std::string_view detail)
    : on_(SpanRecorder::Get().on()) {
  if (!on_) return;
  span_.category = category;
  span_.name = name;
  if (!detail.empty()) span_.name.append(" ").append(detail);
  span_.begin_ns = NowNs();
  SpanRecorder::Get().boundary(span_.begin_ns);
}

ScopedSpan::~ScopedSpan() {
  if (!on_) return;
  span_.end_ns = NowNs();
  SpanRecorder::Get().add(std::move(span_));
}

}  // namespace shardbench::profile
