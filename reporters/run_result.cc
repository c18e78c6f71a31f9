#include "reporters/run_result.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/common/error.h"
#include "reporters/statistics.h"

namespace shardbench {

nlohmann::json ToJson(const Metric& m) {
  nlohmann::json j = {{"name", m.name}, {"unit", m.unit}, {"better", m.better}, {"kind", m.kind},
                      {"samples", m.samples}, {"per_rank", m.per_rank}};
  if (!m.samples.empty()) {
    const Summary s = Summarize(m.samples);
    j["median"] = s.median;
    j["p10"] = s.p10;
    j["p90"] = s.p90;
    j["min"] = s.min;
    j["max"] = s.max;
  } else {
    for (const char* k : {"median", "p10", "p90", "min", "max"}) j[k] = nullptr;
  }
  return j;
}

nlohmann::json ToJson(const RankMemory& m) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"rank", m.rank}, {"categories", m.categories}, {"peak_by_category", m.peak_by_category},
          {"held", m.held}, {"peak_allocated", opt(m.peak_allocated)},
          {"peak_reserved", opt(m.peak_reserved)}, {"host_rss_peak", opt(m.host_rss_peak)}};
}

nlohmann::json ToJson(const RunResult& r) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& m : r.metrics) metrics.push_back(ToJson(m));
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& m : r.memory) memory.push_back(ToJson(m));
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks) checks.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  nlohmann::json out = {{"schema_version", kResultsSchemaVersion},
          {"run_id", r.run_id},
          {"started_at", r.started_at},
          {"provenance", r.provenance},
          {"scenario", r.scenario},
          {"status", r.status},
          {"message", r.message},
          {"metrics", metrics},
          {"memory", memory},
          {"checks", checks},
          {"loss", r.loss},
          {"memory_model", r.memory_model}};
  if (!r.rank_step_seconds.empty()) {
    out["per_rank_steps"] = {{"step_seconds", r.rank_step_seconds}, {"comm_wait_seconds", r.rank_comm_wait_seconds}};
  }
  if (r.steady_state_step) out["steady_state_step"] = *r.steady_state_step;
  if (r.measured_from_step) out["measured_from_step"] = *r.measured_from_step;
  if (r.resumed_from_step) out["resumed_from_step"] = *r.resumed_from_step;
  if (!r.not_measured.empty()) {
    out["not_measured"] = nlohmann::json::array();
    for (const auto& n : r.not_measured) out["not_measured"].push_back({{"name", n.name}, {"why", n.why}});
  }
  if (!r.peer_warnings.empty()) out["peer_warnings"] = r.peer_warnings;
  return out;
}

}  // namespace shardbench
