// A rank's timeline over the measured steps (issue: "see inside a step"). The span recorder
// (engine/profile/span_recorder.h) runs through every measured step; after each one this sums
// up where the rank's step went (engine/profile/span_overlap.h: compute, communication,
// exposed, idle) for the metrics comm_exposed_time, comm_overlap_ratio and rank_idle_time, and,
// with profile.trace, keeps the spans and memory samples. At the end the ranks' timelines meet
// on rank 0, which writes one Trace Event Format file for all of them (Perfetto, chrome://tracing).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/profile/span_overlap.h"
#include "engine/profile/span_recorder.h"
#include "engine/profile/trace_events.h"

namespace shardbench {

class RankTrace {
 public:
  // keep: profile.trace (spans kept for the file, memory sampled at every span boundary).
  explicit RankTrace(bool keep) : keep_(keep) {}
  ~RankTrace() { profile::SpanRecorder::Get().stop(); }
  RankTrace(const RankTrace&) = delete;
  RankTrace& operator=(const RankTrace&) = delete;

  void start();  // the measured window opens
  // After a measured step: its summary over the step's own span (nullopt: no step span, e.g. a
  // peer engine or a step that threw).
  std::optional<profile::SpanOverlap> step_done();
  // Training is over: what was recorded since the last step (a checkpoint save) is kept, and
  // recording stops.
  void finish();
  // Collective: every rank sends its kept timeline to rank 0, which writes them as one trace
  // to `path` (atomically). Clocks: each rank's monotonic clock moved onto the wall clock, so
  // ranks on several hosts line up as well as their clocks agree.
  void write(comm::Communicator* comm, int rank, const std::string& path);

 private:
  bool keep_;
  std::vector<profile::Span> spans_;
  std::vector<profile::MemorySample> memory_;
};

// What write() sends: one rank's timeline as JSON on the wall clock, and back.
std::string RankTimelineJson(int rank, const std::vector<profile::Span>& spans,
                             const std::vector<profile::MemorySample>& memory, int64_t wall_minus_monotonic_ns);
profile::RankSpans ParseRankTimeline(const std::string& json);

}  // namespace shardbench
