// Spans as Trace Event Format JSON (what Perfetto UI and chrome://tracing open): one process
// per rank ("rank N"), threads for its compute track and communication lanes. Spans of one
// track that overlap without nesting (two collectives in flight) go to separate lanes, so that
// on every thread each B has its E, properly nested, with timestamps that never go back.
// Memory samples become a counter track per rank ("host memory", bytes per category, stacked
// by the viewer) on a thread of their own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/profile/span_overlap.h"
#include "engine/profile/span_recorder.h"

namespace shardbench::profile {

struct RankSpans {
  int rank = 0;
  std::vector<Span> spans;
  std::vector<MemorySample> memory;
};

// The counter track's name, and the thread names of the two tracks (the communication lanes
// are "communication" or "communication N"): what readers of our traces match on.
inline constexpr const char* kMemoryCounterName = "host memory";
inline constexpr const char* kComputeThread = "compute";
inline constexpr const char* kCommunicationThread = "communication";

// {"traceEvents": [...], "displayTimeUnit": "ms"}; timestamps in microseconds from origin_ns.
nlohmann::json TraceEventsJson(const std::vector<RankSpans>& ranks, int64_t origin_ns);

// Back from a trace TraceEventsJson wrote (`shardbench trace summarize`): spans and memory
// samples per rank (pid), times in nanoseconds from the trace's origin. Throws InputError
// naming `what` and the event when the file is not such a trace.
std::vector<RankSpans> ReadTraceEvents(const nlohmann::json& trace, const std::string& what);

}  // namespace shardbench::profile
