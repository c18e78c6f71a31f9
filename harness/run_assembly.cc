#include "harness/scenario/yaml_to_json.h"
#include "harness/run_assembly.h"

#include <algorithm>
#include <cmath>

#include "harness/check_table.h"
#include "harness/memory_plan.h"
#include "harness/run_checks.h"
#include "reporters/steady_state.h"
#include "harness/scenario/scenario_parser.h"

namespace shardbench {
namespace {

bool HasNaN(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); });
}

}  // namespace

std::vector<NotMeasured> TakeUnmeasured(std::vector<Metric>& metrics, const std::map<std::string, std::string>& why,
                                        bool only_named) {
  std::vector<NotMeasured> out;
  std::vector<Metric> kept;
  for (auto& m : metrics) {
    if ((!HasNaN(m.samples) && !HasNaN(m.per_rank)) || (only_named && !why.count(m.name))) {
      kept.push_back(std::move(m));
      continue;
    }
    const auto reason = why.find(m.name);
    out.push_back({m.name, reason != why.end() ? reason->second : "derived from a figure this engine does not measure"});
  }
  metrics = std::move(kept);
  // The engine's own reasons for metrics that never reached the table's builders (a row that
  // does not apply without the figure, such as the span metrics).
  for (const auto& [name, reason] : why) {
    const bool listed = std::any_of(out.begin(), out.end(), [&](const NotMeasured& n) { return n.name == name; });
    const bool built = std::any_of(metrics.begin(), metrics.end(), [&](const Metric& m) { return m.name == name; });
    if (!listed && !built) out.push_back({name, reason});
  }
  return out;
}

namespace {

// Ranks counted under valgrind (profile.instructions) ran tens of times slower than they do:
// their times, rates and host RSS would measure valgrind, so only exact figures are reported.
void LeaveOutTimings(RunResult& r) {
  std::vector<Metric> exact;
  for (Metric& m : r.metrics) {
    if (m.kind == "exact") {
      exact.push_back(std::move(m));
    } else {
      r.not_measured.push_back({m.name, "profile.instructions: the ranks ran under valgrind, tens of times slower; "
                                        "measure times in a launch without it"});
    }
  }
  r.metrics = std::move(exact);
}

}  // namespace

nlohmann::json ScenarioBlock(const Scenario& s) {
  return {{"name", s.name}, {"source", s.source}, {"config", YamlToJson(ScenarioToYaml(s))},
          {"overrides", s.overrides}, {"matrix", nlohmann::json::object()}};
}

RunResult AssembleRunResult(const Scenario& s, const std::vector<RankRecord>& all, RunFrame frame) {
  const RankRecord& first = all[0];
  RunResult r;
  r.run_id = frame.run_id;
  r.started_at = frame.started_at;
  r.provenance = std::move(frame.provenance);
  r.scenario = ScenarioBlock(s);
  r.loss = first.loss;
  // Where the step times settle, from the data; warmup auto samples the step-time metrics from
  // there (at most half the steps dropped), everything else keeps the nominal warmup's window.
  r.steady_state_step = SteadyStateStep(SlowestRankStepSeconds(all));
  const int64_t steps_taken = static_cast<int64_t>(first.loss.size());  // fewer than planned when it diverged
  r.measured_from_step = s.train.warmup_auto ? std::min(*r.steady_state_step, steps_taken / 2) : s.train.warmup_steps;
  for (const auto& a : all) {
    r.rank_step_seconds.push_back(a.step_seconds);
    r.rank_comm_wait_seconds.push_back(a.comm_wait_seconds);
  }
  frame.facts.warmup_steps = s.train.warmup_steps;
  frame.facts.step_metrics_from = r.measured_from_step;
  frame.facts.global_tokens = s.train.batch_size * s.train.grad_accumulation * s.train.seq_len * s.world_size;
  frame.facts.trainable_bytes = frame.trainable_bytes;
  r.metrics = BuildMetrics(all, frame.facts);
  r.not_measured = TakeUnmeasured(r.metrics, frame.not_measured, /*only_named=*/!frame.peer);
  for (auto& m : r.metrics) {
    if (frame.sampled_here.count(m.name)) m.kind = "sampled";
  }
  if (s.profile.instructions) LeaveOutTimings(r);
  r.memory = BuildMemory(all);
  r.memory_model = PredictedVsMeasured(PlanScenarioMemory(s, 0), ToJson(r.memory[0]));
  std::vector<Check> checks = {FiniteCheck(all, s.total_steps())};
  checks.insert(checks.end(), frame.checks.begin(), frame.checks.end());
  const std::vector<Check> thresholds = JudgeThresholdChecks(s, r.metrics, r.not_measured, frame.facts);
  checks.insert(checks.end(), thresholds.begin(), thresholds.end());
  r.checks = InTableOrder(std::move(checks));
  r.resumed_from_step = frame.resumed_from_step;
  r.peer_warnings = std::move(frame.peer_warnings);
  JudgeChecks(r);
  return r;
}

void JudgeChecks(RunResult& r) {
  r.status = "ok";
  r.message.clear();
  for (const auto& c : r.checks) {
    if (!c.passed) {
      r.status = "failed";
      r.message += (r.message.empty() ? "" : "; ") + ("check '" + c.name + "' failed: " + c.detail);
    }
  }
}

}  // namespace shardbench
