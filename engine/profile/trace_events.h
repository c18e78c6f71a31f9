// Spans as Trace Event Format JSON (what Perfetto UI and chrome://tracing open): one process
// per rank ("rank N"), threads for its compute track and communication lanes. Spans of one
// track that overlap without nesting (two collectives in flight) go to separate lanes, so that
// on every thread each B has its E, properly nested, with timestamps that never go back.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/profile/span_overlap.h"

namespace shardbench::profile {

struct RankSpans {
  int rank = 0;
  std::vector<Span> spans;
};

// {"traceEvents": [...], "displayTimeUnit": "ms"}; timestamps in microseconds from origin_ns.
nlohmann::json TraceEventsJson(const std::vector<RankSpans>& ranks, int64_t origin_ns);

}  // namespace shardbench::profile
