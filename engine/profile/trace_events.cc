#include "engine/profile/trace_events.h"

#include <algorithm>
#include <string>

namespace shardbench::profile {
namespace {

// Spans of one track in lanes where any two are nested or disjoint: sorted by start (the
// longer first), each goes to the first lane whose open span contains it or has ended.
std::vector<std::vector<const Span*>> Lanes(std::vector<const Span*> spans) {
  std::sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) {
    return a->begin_ns != b->begin_ns ? a->begin_ns < b->begin_ns : a->end_ns > b->end_ns;
  });
  std::vector<std::vector<const Span*>> lanes, open;  // open: each lane's stack of unfinished spans
  for (const Span* s : spans) {
    size_t lane = 0;
    for (; lane < lanes.size(); ++lane) {
      auto& stack = open[lane];
      while (!stack.empty() && stack.back()->end_ns <= s->begin_ns) stack.pop_back();
      if (stack.empty() || stack.back()->end_ns >= s->end_ns) break;
    }
    if (lane == lanes.size()) lanes.emplace_back(), open.emplace_back();
    lanes[lane].push_back(s);
    open[lane].push_back(s);
  }
  return lanes;
}

// One lane's B and E events in time order (the spans nest or are disjoint).
void EmitLane(const std::vector<const Span*>& lane, int pid, int tid, int64_t origin_ns, nlohmann::json& events) {
  auto us = [&](int64_t ns) { return static_cast<double>(ns - origin_ns) / 1000.0; };
  std::vector<const Span*> stack;
  auto close_until = [&](int64_t t) {
    while (!stack.empty() && stack.back()->end_ns <= t) {
      events.push_back({{"ph", "E"}, {"pid", pid}, {"tid", tid}, {"ts", us(stack.back()->end_ns)}});
      stack.pop_back();
    }
  };
  for (const Span* s : lane) {
    close_until(s->begin_ns);
    events.push_back({{"ph", "B"}, {"pid", pid}, {"tid", tid}, {"ts", us(s->begin_ns)}, {"name", s->name}, {"cat", s->category}});
    stack.push_back(s);
  }
  close_until(INT64_MAX);
}

}  // namespace

nlohmann::json TraceEventsJson(const std::vector<RankSpans>& ranks, int64_t origin_ns) {
  nlohmann::json events = nlohmann::json::array();
  for (const RankSpans& r : ranks) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", r.rank}, {"args", {{"name", "rank " + std::to_string(r.rank)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", r.rank}, {"args", {{"sort_index", r.rank}}}});
    std::vector<const Span*> compute, communication;
    for (const Span& s : r.spans) {
      if (s.end_ns < s.begin_ns) continue;  // never recorded whole
      (s.track == SpanTrack::kCompute ? compute : communication).push_back(&s);
    }
    int tid = 0;
    for (const auto& [track, spans] : {std::pair<const char*, const std::vector<const Span*>*>{"compute", &compute},
                                       {"communication", &communication}}) {
      const auto lanes = Lanes(*spans);
      for (size_t l = 0; l < lanes.size(); ++l, ++tid) {
        const std::string name = std::string(track) + (lanes.size() > 1 ? " " + std::to_string(l) : "");
        events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r.rank}, {"tid", tid}, {"args", {{"name", name}}}});
        EmitLane(lanes[l], r.rank, tid, origin_ns, events);
      }
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace shardbench::profile
