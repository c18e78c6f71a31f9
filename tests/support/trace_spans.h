// A written trace (Trace Event Format, harness/rank_trace.h) read back into the spans the ranks
// recorded, per rank, on their tracks (thread "compute" or "communication"), so a test can put
// any subset of them through the same arithmetic as the overlap metrics
// (engine/profile/span_overlap.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/profile/span_overlap.h"

namespace shardbench::testing {

// pid (rank) -> its spans, in the order they closed; other threads (memory counters) are skipped.
std::map<int, std::vector<profile::Span>> TraceSpans(const nlohmann::json& trace);

}  // namespace shardbench::testing
