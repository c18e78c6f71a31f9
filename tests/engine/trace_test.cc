// Span overlap arithmetic (engine/profile/span_overlap.h) on hand-built span sets, and the Trace
// Event Format writer (engine/profile/trace_events.h): every B has its E, timestamps never go
// back on a thread, every process and thread is named.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/profile/span_overlap.h"
#include "engine/profile/trace_events.h"

namespace shardbench::profile {
namespace {

Span Compute(const std::string& name, int64_t b, int64_t e, const std::string& category = "forward") {
  return {name, category, SpanTrack::kCompute, b, e};
}
Span Comm(const std::string& name, int64_t b, int64_t e) { return {name, "unshard", SpanTrack::kCommunication, b, e}; }

TEST(SpanOverlap, ExposedIsCommunicationNoComputeCovers) {
  // compute [0,100) and [150,250); an all-gather in flight [80,170): 20 + 20 of its 90 hidden.
  const auto o = SummarizeSpans({Compute("f", 0, 100), Compute("b", 150, 250), Comm("ag", 80, 170)}, 0, 300);
  EXPECT_EQ(o.window_ns, 300);
  EXPECT_EQ(o.compute_ns, 200);
  EXPECT_EQ(o.communication_ns, 90);
  EXPECT_EQ(o.exposed_ns, 50);
  EXPECT_EQ(o.idle_ns, 50);  // [250, 300): neither
  EXPECT_DOUBLE_EQ(o.overlap_ratio(), 1.0 - 50.0 / 90.0);
}

TEST(SpanOverlap, WaitsAreNotComputeAndSpansAreClippedToTheWindow) {
  // The thread waits [100,150) for a collective in flight [90,150): exposed 50, hidden 10.
  const auto o = SummarizeSpans({Compute("step", 0, 200, "step"), Compute("f", 0, 100), Compute("wait ag", 100, 150, "wait"),
                                 Compute("b", 150, 200), Comm("ag", 90, 150), Comm("early", -50, 10)},
                                0, 200);
  EXPECT_EQ(o.compute_ns, 150);
  EXPECT_EQ(o.communication_ns, 70);  // [0,10) clipped + [90,150)
  EXPECT_EQ(o.exposed_ns, 50);
  EXPECT_EQ(o.idle_ns, 0);
  EXPECT_DOUBLE_EQ(SummarizeSpans({}, 0, 10).overlap_ratio(), 1.0);  // nothing to hide
}

// Checks the Trace Event Format rules a viewer relies on; returns the number of B/E pairs.
size_t CheckValid(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, std::vector<std::string>> open;  // (pid, tid) -> names of open B
  std::map<std::pair<int, int>, double> last_ts;
  std::set<int> named_pids;
  std::set<std::pair<int, int>> named_tids;
  size_t pairs = 0;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    const int pid = e.at("pid");
    if (ph == "M") {
      if (e.at("name") == "process_name") named_pids.insert(pid);
      if (e.at("name") == "thread_name") named_tids.insert({pid, e.at("tid").get<int>()});
      continue;
    }
    const std::pair<int, int> thread{pid, e.at("tid").get<int>()};
    EXPECT_TRUE(named_pids.count(pid)) << "pid " << pid << " used before it was named";
    EXPECT_TRUE(named_tids.count(thread)) << "tid " << thread.second << " used before it was named";
    const double ts = e.at("ts");
    if (last_ts.count(thread)) {
      EXPECT_GE(ts, last_ts[thread]) << e.dump();
    }
    last_ts[thread] = ts;
    if (ph == "B") {
      open[thread].push_back(e.at("name"));
    } else {
      EXPECT_EQ(ph, "E");
      EXPECT_FALSE(open[thread].empty()) << "an E without its B: " << e.dump();
      if (!open[thread].empty()) open[thread].pop_back(), ++pairs;
    }
  }
  for (const auto& [thread, names] : open) EXPECT_TRUE(names.empty()) << names.size() << " B without E on tid " << thread.second;
  return pairs;
}

TEST(TraceEvents, EveryBeginHasItsEndTimesNeverGoBackThreadsAreNamed) {
  RankSpans r0{0, {Compute("step", 1000, 9000, "step"), Compute("forward", 1000, 4000), Compute("layers.0", 1000, 2000),
                   Compute("layers.1", 2000, 4000), Compute("backward", 4000, 8000, "backward"),
                   Compute("optimizer", 8000, 9000, "optimizer"),
                   // Two all-gathers in flight at once, overlapping without nesting: two lanes.
                   Comm("all_gather layers.0", 900, 2500), Comm("all_gather layers.1", 2000, 3500),
                   Comm("reduce_scatter layers.1", 5000, 6000)}};
  RankSpans r1{1, {Compute("step", 1100, 9100, "step"), Comm("all_gather layers.0", 1100, 1900)}};
  const nlohmann::json trace = TraceEventsJson({r0, r1}, 1000);
  EXPECT_EQ(CheckValid(trace), 11u);
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  std::set<std::string> threads;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 0) threads.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "B" && e["name"] == "layers.0") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);  // microseconds from the origin
    }
  }
  EXPECT_EQ(threads, (std::set<std::string>{"compute", "communication 0", "communication 1"}));
}

}  // namespace
}  // namespace shardbench::profile
