#include "engine/profile/trace_events.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "engine/common/error.h"

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
    for (const auto& [track, spans] : {std::pair<const char*, const std::vector<const Span*>*>{kComputeThread, &compute},
                                       {kCommunicationThread, &communication}}) {
      const auto lanes = Lanes(*spans);
      for (size_t l = 0; l < lanes.size(); ++l, ++tid) {
        const std::string name = std::string(track) + (lanes.size() > 1 ? " " + std::to_string(l) : "");
        events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r.rank}, {"tid", tid}, {"args", {{"name", name}}}});
        EmitLane(lanes[l], r.rank, tid, origin_ns, events);
      }
    }
    if (!r.memory.empty()) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r.rank}, {"tid", tid}, {"args", {{"name", "memory"}}}});
      std::vector<MemorySample> memory = r.memory;  // sampled on several threads: nearly, not surely, in order
      std::stable_sort(memory.begin(), memory.end(), [](const auto& a, const auto& b) { return a.at_ns < b.at_ns; });
      for (const MemorySample& m : memory) {
        nlohmann::json bytes = nlohmann::json::object();
        for (size_t c = 0; c < memory::kCategories; ++c) bytes[memory::CategoryName(static_cast<memory::Category>(c))] = m.bytes[c];
        events.push_back({{"ph", "C"}, {"pid", r.rank}, {"tid", tid}, {"ts", static_cast<double>(m.at_ns - origin_ns) / 1000.0},
                          {"name", kMemoryCounterName}, {"args", bytes}});
      }
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

std::vector<RankSpans> ReadTraceEvents(const nlohmann::json& trace, const std::string& what) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    throw InputError(what + ": not a Trace Event Format object (no traceEvents array)");
  }
  std::map<int, RankSpans> ranks;
  std::map<std::pair<int, int>, SpanTrack> tracks;  // (pid, tid) -> track, from thread names
  std::map<std::pair<int, int>, std::vector<Span>> open;
  size_t index = 0;
  std::string at;
  // Microseconds within +-2^53 ns (what a double holds exactly): anything else is not our trace.
  auto ns = [&](const nlohmann::json& e) {
    const double us = e.at("ts").get<double>();
    if (!std::isfinite(us) || std::fabs(us) > 9.0e12) throw InputError(at + ": ts " + e.at("ts").dump() + " is out of range");
    return static_cast<int64_t>(std::llround(us * 1000.0));
  };
  auto id = [&](const nlohmann::json& e, const char* key) {
    const nlohmann::json& v = e.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1'000'000) {
      throw InputError(at + ": " + key + " " + v.dump() + " is not a small non-negative integer");
    }
    return v.get<int>();
  };
  for (const auto& e : trace["traceEvents"]) {
    at = what + ": traceEvents[" + std::to_string(index++) + "]";
    try {
      const std::string ph = e.at("ph");
      const int pid = id(e, "pid");
      RankSpans& r = ranks[pid];
      r.rank = pid;
      if (ph == "M") {
        if (e.at("name") == "thread_name") {
          const std::string name = e.at("args").at("name");
          tracks[{pid, id(e, "tid")}] =
              name.rfind(kCommunicationThread, 0) == 0 ? SpanTrack::kCommunication : SpanTrack::kCompute;
        }
        continue;
      }
      const std::pair<int, int> thread{pid, id(e, "tid")};
      if (ph == "B") {
        Span s;
        s.name = e.at("name");
        s.category = e.value("cat", "");
        s.track = tracks.count(thread) ? tracks[thread] : SpanTrack::kCompute;
        s.begin_ns = ns(e);
        open[thread].push_back(std::move(s));
      } else if (ph == "E") {
        if (open[thread].empty()) throw InputError(at + ": an end (E) with no begin (B) open on its thread");
        Span s = std::move(open[thread].back());
        open[thread].pop_back();
        s.end_ns = ns(e);
        if (s.end_ns < s.begin_ns) throw InputError(at + ": an end (E) before its begin (B)");
        r.spans.push_back(std::move(s));
      } else if (ph == "C" && e.at("name") == kMemoryCounterName) {
        MemorySample m;
        m.at_ns = ns(e);
        for (size_t c = 0; c < memory::kCategories; ++c) {
          m.bytes[c] = e.at("args").value(memory::CategoryName(static_cast<memory::Category>(c)), int64_t{0});
        }
        r.memory.push_back(m);
      }
    } catch (const nlohmann::json::exception& x) {
      throw InputError(at + ": " + x.what());
    }
  }
  for (const auto& [thread, spans] : open) {
    if (!spans.empty()) {
      throw InputError(what + ": '" + spans.back().name + "' on pid " + std::to_string(thread.first) + ", tid " +
                       std::to_string(thread.second) + " begins (B) and never ends (E)");
    }
  }
  std::vector<RankSpans> out;
  for (auto& [pid, r] : ranks) out.push_back(std::move(r));
  return out;
}

}  // namespace shardbench::profile
