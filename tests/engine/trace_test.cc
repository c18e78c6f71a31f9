// Span overlap arithmetic (engine/profile/span_overlap.h) on hand-built span sets, and the Trace
// Event Format writer (engine/profile/trace_events.h): every B has its E, timestamps never go
// back on a thread, every process and thread is named.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "engine/profile/interval_set.h"
#include "engine/profile/span_overlap.h"
#include "engine/profile/trace_events.h"
#include "reporters/trace_summary.h"
#include "tests/support/trace_check.h"

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

TEST(SpanOverlap, ComputeInsideASpanStopsWhileItWaits) {
  // A unit's unshard [20,70) waits [30,60) for its all-gather, in flight [25,60); forward runs
  // [0,100) around it. The thread computes [0,30) and [60,100): 70; the all-gather's [25,30)
  // is hidden, [30,60) exposed.
  const auto o = SummarizeSpans({Compute("step", 0, 100, "step"), Compute("forward", 0, 100),
                                 Compute("unshard layers.0", 20, 70, "unshard"), Compute("wait all_gather", 30, 60, "wait"),
                                 Comm("all_gather", 25, 60)},
                                0, 100);
  EXPECT_EQ(o.compute_ns, 70);
  EXPECT_EQ(o.communication_ns, 35);
  EXPECT_EQ(o.exposed_ns, 30);
  EXPECT_EQ(o.idle_ns, 0);
  EXPECT_DOUBLE_EQ(o.overlap_ratio(), 5.0 / 35.0);
}

TEST(IntervalSet, DifferenceKeepsWhatTheOtherSetDoesNotCover) {
  EXPECT_EQ(Difference({{0, 10}, {20, 30}}, {{5, 22}, {25, 26}}), (std::vector<Interval>{{0, 5}, {22, 25}, {26, 30}}));
  EXPECT_EQ(Difference({{0, 10}}, {}), (std::vector<Interval>{{0, 10}}));
  EXPECT_EQ(Difference({{0, 10}}, {{-5, 15}}), (std::vector<Interval>{}));
  EXPECT_EQ(Difference({{0, 10}, {12, 14}}, {{10, 12}}), (std::vector<Interval>{{0, 10}, {12, 14}}));
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
  EXPECT_EQ(testing::CheckTraceValid(trace), 11u);
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

TEST(TraceEvents, MemoryCountersAndReadingTheTraceBack) {
  RankSpans r0{0, {Compute("step", 1000, 9000, "step"), Compute("forward", 1000, 4000), Compute("wait all_gather", 2000, 3000, "wait"),
                   Comm("all_gather", 1500, 3000), Comm("all_gather", 2500, 3500)}};
  MemorySample early, late;
  early.at_ns = 1000;
  early.bytes[static_cast<size_t>(memory::Category::kParamsSharded)] = 4096;
  late.at_ns = 4000;
  late.bytes[static_cast<size_t>(memory::Category::kActivations)] = 1 << 20;
  r0.memory = {late, early};  // sampled on two threads: out of order
  RankSpans r1{1, {Compute("step", 1000, 8000, "step")}};
  const nlohmann::json trace = TraceEventsJson({r0, r1}, 1000);
  testing::CheckTraceValid(trace);
  size_t counters = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "C") continue;
    ++counters;
    EXPECT_EQ(e["name"], kMemoryCounterName);
    EXPECT_EQ(e["args"].size(), memory::kCategories);
  }
  EXPECT_EQ(counters, 2u);

  // Read back: the same spans per rank (times from the origin), tracks from the thread names.
  const std::vector<RankSpans> back = ReadTraceEvents(trace, "trace.json");
  ASSERT_EQ(back.size(), 2u);
  ASSERT_EQ(back[0].spans.size(), r0.spans.size());
  int64_t comm = 0, waits = 0;
  for (const Span& s : back[0].spans) {
    comm += s.track == SpanTrack::kCommunication;
    waits += s.category == "wait";
  }
  EXPECT_EQ(comm, 2);
  EXPECT_EQ(waits, 1);
  const SpanOverlap original = SummarizeSpans(r0.spans, 1000, 9000), read = SummarizeSpans(back[0].spans, 0, 8000);
  EXPECT_EQ(read.compute_ns, original.compute_ns);
  EXPECT_EQ(read.exposed_ns, original.exposed_ns);
  ASSERT_EQ(back[0].memory.size(), 2u);
  EXPECT_EQ(back[0].memory[0].at_ns, 0);  // sorted, from the origin
  EXPECT_EQ(back[0].memory[0].bytes[static_cast<size_t>(memory::Category::kParamsSharded)], 4096);
  EXPECT_EQ(back[0].memory[1].bytes[static_cast<size_t>(memory::Category::kActivations)], 1 << 20);

  EXPECT_THROW(ReadTraceEvents(nlohmann::json::object(), "x.json"), InputError);
  nlohmann::json unmatched = trace;
  unmatched["traceEvents"].push_back({{"ph", "E"}, {"pid", 5}, {"tid", 0}, {"ts", 1.0}});
  EXPECT_THROW(ReadTraceEvents(unmatched, "x.json"), InputError);
}

TEST(TraceSummary, WhereTheTimeWentTopSpansAndTheStraggler) {
  // Rank 0 computes 60 of each 100-unit step and waits 40 for rank 1's all-gather; rank 1
  // computes all 100 (the straggler); rank 2 like rank 0.
  auto rank = [](int r, int64_t compute) {
    RankSpans out{r, {}};
    for (int64_t step = 0; step < 2; ++step) {
      const int64_t t = step * 100;
      out.spans.push_back(Compute("step", t, t + 100, "step"));
      out.spans.push_back(Compute("forward", t, t + compute));
      out.spans.push_back(Compute("optimizer", t + compute - 10, t + compute, "optimizer"));
      if (compute < 100) {
        out.spans.push_back(Compute("wait all_gather", t + compute, t + 100, "wait"));
        out.spans.push_back(Comm("all_gather", t + compute, t + 100));
      }
    }
    return out;
  };
  const auto summary = shardbench::SummarizeTrace({rank(0, 60), rank(1, 100), rank(2, 60)}, 2);
  ASSERT_EQ(summary.ranks.size(), 3u);
  const auto& r0 = summary.ranks[0];
  EXPECT_EQ(r0.steps, 2);
  EXPECT_DOUBLE_EQ(r0.step_s, 200e-9);
  EXPECT_DOUBLE_EQ(r0.compute_s, 120e-9);
  EXPECT_DOUBLE_EQ(r0.optimizer_s, 20e-9);
  EXPECT_DOUBLE_EQ(r0.exposed_comm_s, 80e-9);
  EXPECT_DOUBLE_EQ(r0.idle_s, 0.0);
  ASSERT_EQ(r0.top.size(), 2u);  // top_n
  EXPECT_EQ(r0.top[0].name, "forward");
  EXPECT_EQ(r0.top[0].count, 2);
  EXPECT_EQ(summary.straggler, 1);
  EXPECT_DOUBLE_EQ(summary.straggler_ratio, 200.0 / 120.0);  // busy: step less exposed
  const std::string text = shardbench::FormatTraceSummary(summary);
  EXPECT_NE(text.find("straggler: rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0: 2 steps"), std::string::npos) << text;
}

}  // namespace
}  // namespace shardbench::profile
