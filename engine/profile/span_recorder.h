// Where this process's spans go while a run measures its steps (one process is one rank). The
// trainer records its phases, the sharding units their unshard / reshard / reduce-scatter, the
// communicator every collective (on the thread that runs it) and every wait for one; the
// scenario runner takes them after each step to sum up overlap (span_overlap.h) and, with
// profile.trace, keeps them for the rank's timeline (trace_events.h).
//
// Off until start(): a span then costs a clock read at each end and a locked push (~0.1 us; a
// 125m step records ~200). Memory samples (the tracking allocator's bytes per category at every
// span boundary) only when start() asks for them: they take the allocator's lock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/memory/memory_record.h"
#include "engine/profile/span_overlap.h"

namespace shardbench::profile {

// The clock of every span: CLOCK_MONOTONIC in nanoseconds, shared by the processes of one host.
int64_t NowNs();

// The tracking allocator's bytes per memory::Category at one instant.
struct MemorySample {
  int64_t at_ns = 0;
  std::array<int64_t, memory::kCategories> bytes{};
};

class SpanRecorder {
 public:
  static SpanRecorder& Get();  // the process's (the rank's) recorder

  bool on() const { return on_.load(std::memory_order_relaxed); }
  // Starts recording, dropping anything kept.
  void start(bool memory_samples);
  void stop();
  void add(Span span);  // samples memory at its end
  void boundary(int64_t at_ns);  // a span began: samples memory (when asked for)
  // The spans (and memory samples) recorded since start() or the last take.
  std::vector<Span> take_spans();
  std::vector<MemorySample> take_memory();

 private:
  void sample_memory(int64_t at_ns);  // under mu_
  std::atomic<bool> on_{false};
  bool memory_samples_ = false;
  std::mutex mu_;
  std::vector<Span> spans_;
  std::vector<MemorySample> memory_;
};

// A span on the calling thread's compute track from construction to destruction (nothing when
// the recorder is off). `name` is built only when recording.
class ScopedSpan {
 public:
  // The span's name: `name`, then " " + `detail` when there is one ("unshard" "layers.3").
  ScopedSpan(const char* category, const char* name, std::string_view detail = {});
  ~ScopedSpan();
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  bool on_;
  Span span_;
};

}  // namespace shardbench::profile
