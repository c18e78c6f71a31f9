// Where each rank's measured steps went, from its timeline (a trace.json `run --trace` wrote;
// engine/profile/trace_events.h reads it back): HTA's questions, asked of our own spans. Per
// rank: step time, compute, the optimizer's part of it, communication exposed and hidden,
// idle; its longest spans; and the straggler: the rank longest busy, busy being its step time
// less the communication it sat exposed to (waiting for peers), as step_time_busy counts it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/profile/trace_events.h"

namespace shardbench {

struct SpanTotal {
  std::string name;
  int64_t count = 0;
  double seconds = 0;  // inclusive (nested spans count in their parents too)
};

struct RankTimeSummary {
  int rank = 0;
  int64_t steps = 0;
  double step_s = 0, compute_s = 0, optimizer_s = 0, exposed_comm_s = 0, hidden_comm_s = 0, idle_s = 0;
  std::vector<SpanTotal> top;  // longest by total time, steps left out
};

struct TraceSummary {
  std::vector<RankTimeSummary> ranks;
  // The rank longest busy, and its busy time over the ranks' median (1: all alike).
  std::optional<int> straggler;
  double straggler_ratio = 1.0;
};

// Sums each rank's "step" spans (a timeline without any is reported with 0 steps).
TraceSummary SummarizeTrace(const std::vector<profile::RankSpans>& ranks, size_t top_n = 10);
std::string FormatTraceSummary(const TraceSummary& summary);

}  // namespace shardbench
