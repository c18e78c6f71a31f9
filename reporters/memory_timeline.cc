#include "reporters/memory_timeline.h"

#include <fstream>

#include "engine/memory/memory_record.h"
#include "engine/profile/trace_events.h"

namespace shardbench {

nlohmann::json MemoryTimelineJson(const std::string& trace_path) {
  std::ifstream in(trace_path);
  if (!in) return nullptr;
  const nlohmann::json trace = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (trace.is_discarded()) return nullptr;
  std::vector<profile::RankSpans> ranks;
  try {
    ranks = profile::ReadTraceEvents(trace, trace_path);
  } catch (const std::exception&) {
    return nullptr;  // not ours to judge here: `trace summarize` names what is wrong
  }
  if (ranks.empty()) return nullptr;
  const profile::RankSpans& r = ranks.front();
  const profile::Span* last = nullptr;
  for (const auto& s : r.spans) {
    if (s.category == "step" && (!last || s.begin_ns > last->begin_ns)) last = &s;
  }
  if (!last) return nullptr;
  nlohmann::json step_ms = nlohmann::json::array(), categories = nlohmann::json::object();
  for (size_t c = 0; c < memory::kCategories; ++c) categories[memory::CategoryName(memory::CategoryAt(c))] = nlohmann::json::array();
  for (const auto& m : r.memory) {
    if (m.at_ns < last->begin_ns || m.at_ns > last->end_ns) continue;
    step_ms.push_back(1e-6 * static_cast<double>(m.at_ns - last->begin_ns));
    for (size_t c = 0; c < memory::kCategories; ++c) categories[memory::CategoryName(memory::CategoryAt(c))].push_back(m.bytes[c]);
  }
  if (step_ms.empty()) return nullptr;
  return {{"rank", r.rank}, {"step_ms", step_ms}, {"categories", categories},
          {"step_s", 1e-9 * static_cast<double>(last->end_ns - last->begin_ns)}};
}

}  // namespace shardbench
