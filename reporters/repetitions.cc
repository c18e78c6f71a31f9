#include "reporters/repetitions.h"

#include <algorithm>
#include <stdexcept>

#include "reporters/statistics.h"

namespace shardbench {

int StatusSeverity(const std::string& status) { return status == "ok" ? 0 : status == "failed" ? 1 : 2; }

void SetMetricSamples(nlohmann::json& metric, const std::vector<double>& samples) {
  metric["samples"] = samples;
  if (samples.empty()) return;
  const Summary s = Summarize(samples);
  metric["median"] = s.median;
  metric["p10"] = s.p10;
  metric["p90"] = s.p90;
  metric["min"] = s.min;
  metric["max"] = s.max;
}

nlohmann::json MergeRepetitions(const std::vector<nlohmann::json>& reps) {
  if (reps.empty()) throw std::invalid_argument("no repetitions to merge");
  nlohmann::json merged = reps.front();
  merged["repetitions"] = reps.size();
  // Metrics: all samples, plus each repetition's median.
  for (size_t m = 0; m < merged["metrics"].size(); ++m) {
    nlohmann::json& metric = merged["metrics"][m];
    std::vector<double> samples, medians;
    for (const auto& rep : reps) {
      const auto& rm = rep["metrics"][m];
      if (rm["name"] != metric["name"]) throw std::invalid_argument("repetitions disagree on metric order");
      for (const auto& x : rm["samples"]) samples.push_back(x.get<double>());
      if (!rm["median"].is_null()) medians.push_back(rm["median"].get<double>());
    }
    SetMetricSamples(metric, samples);
    metric["repetition_medians"] = medians;
  }
  // Checks: a check fails if it failed in any repetition (its detail from the first failure).
  for (size_t c = 0; c < merged["checks"].size(); ++c) {
    for (size_t r = 1; r < reps.size(); ++r) {
      const auto& rc = reps[r]["checks"][c];
      if (!rc["passed"].get<bool>() && merged["checks"][c]["passed"].get<bool>()) {
        merged["checks"][c] = rc;
        merged["checks"][c]["detail"] = "repetition " + std::to_string(r) + ": " + rc["detail"].get<std::string>();
      }
    }
  }
  for (const auto& rep : reps) {
    if (StatusSeverity(rep["status"]) > StatusSeverity(merged["status"])) {
      merged["status"] = rep["status"];
      merged["message"] = rep["message"];
    }
  }
  nlohmann::json losses = nlohmann::json::array();
  for (const auto& rep : reps) losses.push_back(rep["loss"]);
  merged["loss_by_repetition"] = losses;
  // Per-step data stays per repetition (each launch has its own warmup and steady state):
  // per_rank_steps stays the first repetition's, every one's is listed beside it. The merged
  // steady_state_step and measured_from_step are the latest any repetition had: the point a
  // fixed warmup must reach, and from which every repetition's metrics were steady.
  if (reps.front().contains("per_rank_steps")) {
    nlohmann::json steps = nlohmann::json::array(), from = nlohmann::json::array();
    int64_t steady = 0, latest_from = 0;
    for (const auto& rep : reps) {
      steps.push_back(rep.value("per_rank_steps", nlohmann::json()));
      from.push_back(rep.value("measured_from_step", int64_t{0}));
      steady = std::max(steady, rep.value("steady_state_step", int64_t{0}));
      latest_from = std::max(latest_from, rep.value("measured_from_step", int64_t{0}));
    }
    merged["per_rank_steps_by_repetition"] = steps;
    merged["measured_from_step_by_repetition"] = from;
    merged["steady_state_step"] = steady;
    merged["measured_from_step"] = latest_from;
  }
  for (const auto& rep : reps) {  // a restarted job continued one of them from its checkpoint
    if (rep.contains("resumed_from_step")) merged["resumed_from_step"] = rep["resumed_from_step"];
  }
  return merged;
}

}  // namespace shardbench
