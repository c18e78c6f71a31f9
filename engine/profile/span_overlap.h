// Where a rank's step went, from the spans it recorded on its two tracks: compute (the trainer's
// thread: forward, backward, optimizer; a `wait` span there is the thread blocked on a
// collective, not compute) and communication (each collective from issue to completion, on
// whatever thread the backend runs it). The same arithmetic as the GPU's kernel overlap
// (kernel_overlap.h), so `comm_exposed_time` and `comm_overlap_ratio` mean one thing on every
// backend: communication in flight while no compute runs is exposed; time with neither is idle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardbench::profile {

enum class SpanTrack { kCompute, kCommunication };

struct Span {
  std::string name;      // "forward", "all_gather layers.3", "optimizer"
  std::string category;  // step | forward | backward | unshard | reshard | reduce_scatter | wait | optimizer | ...
  SpanTrack track = SpanTrack::kCompute;
  int64_t begin_ns = 0, end_ns = 0;
};

struct SpanOverlap {
  int64_t window_ns = 0;         // the time summarised (a step, or the measured steps)
  int64_t compute_ns = 0;        // union of compute-track spans (not steps) minus their waits
  int64_t communication_ns = 0;  // union of collectives in flight
  int64_t exposed_ns = 0;        // communication while no compute runs
  int64_t idle_ns = 0;           // neither compute nor communication
  // 1 - exposed / communication (1: fully hidden, also without communication; 0: fully exposed).
  double overlap_ratio() const {
    return communication_ns > 0 ? 1.0 - static_cast<double>(exposed_ns) / static_cast<double>(communication_ns) : 1.0;
  }
};

// Spans are clipped to [window_begin, window_end).
SpanOverlap SummarizeSpans(const std::vector<Span>& spans, int64_t window_begin, int64_t window_end);

}  // namespace shardbench::profile
