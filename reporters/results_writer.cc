#include "reporters/results_writer.h"

namespace shardbench {
namespace {

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json ToJson(const RankSteps& s) {
  return {{"step_seconds", s.step_seconds}, {"comm_wait_seconds", s.comm_wait_seconds}};
}

}  // namespace

nlohmann::json ToJson(const StoredMetric& m) {
  nlohmann::json j = {
      {"name", m.name},       {"unit", m.unit},         {"better", m.better},         {"kind", m.kind},
      {"samples", m.samples}, {"per_rank", m.per_rank}, {"median", OrNull(m.median)}, {"p10", OrNull(m.p10)},
      {"p90", OrNull(m.p90)}, {"min", OrNull(m.min)},   {"max", OrNull(m.max)}};
  if (m.repetition_medians) j["repetition_medians"] = *m.repetition_medians;
  return j;
}

nlohmann::json ToJson(const StoredResult& r) {
  nlohmann::json out = {{"run_id", r.run_id},
                        {"started_at", r.started_at},
                        {"provenance", r.provenance},
                        {"scenario", r.scenario},
                        {"status", r.status},
                        {"message", r.message},
                        {"metrics", nlohmann::json::array()},
                        {"memory", nlohmann::json::array()},
                        {"checks", nlohmann::json::array()},
                        {"loss", r.loss},
                        {"memory_model", r.memory_model}};
  if (r.schema_version) out["schema_version"] = *r.schema_version;
  for (const auto& m : r.metrics) out["metrics"].push_back(ToJson(m));
  for (const auto& m : r.memory) out["memory"].push_back(ToJson(m));
  for (const auto& c : r.checks)
    out["checks"].push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  if (r.per_rank_steps) out["per_rank_steps"] = ToJson(*r.per_rank_steps);
  if (r.steady_state_step) out["steady_state_step"] = *r.steady_state_step;
  if (r.measured_from_step) out["measured_from_step"] = *r.measured_from_step;
  if (r.resumed_from_step) out["resumed_from_step"] = *r.resumed_from_step;
  if (r.repetitions) out["repetitions"] = *r.repetitions;
  if (!r.not_measured.empty()) {
    out["not_measured"] = nlohmann::json::array();
    for (const auto& n : r.not_measured) out["not_measured"].push_back({{"name", n.name}, {"why", n.why}});
  }
  if (!r.peer_warnings.empty()) out["peer_warnings"] = r.peer_warnings;
  if (r.loss_by_repetition) out["loss_by_repetition"] = *r.loss_by_repetition;
  if (r.per_rank_steps_by_repetition) {
    out["per_rank_steps_by_repetition"] = nlohmann::json::array();
    for (const auto& s : *r.per_rank_steps_by_repetition)
      out["per_rank_steps_by_repetition"].push_back(s ? ToJson(*s) : nullptr);
  }
  if (r.measured_from_step_by_repetition) out["measured_from_step_by_repetition"] = *r.measured_from_step_by_repetition;
  return out;
}

}  // namespace shardbench
