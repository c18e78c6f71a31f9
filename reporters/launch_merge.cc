#include "reporters/launch_merge.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "reporters/statistics.h"

namespace shardbench {
namespace {

// A result's launches, explicit whether it is one launch or a merge of several.
std::vector<double> LaunchMedians(const StoredMetric& m) {
  if (m.repetition_medians) return *m.repetition_medians;
  return m.median ? std::vector<double>{*m.median} : std::vector<double>{};
}

int64_t Launches(const StoredResult& r) { return r.repetitions.value_or(1); }

std::vector<std::vector<double>> LossByLaunch(const StoredResult& r) {
  return r.loss_by_repetition ? *r.loss_by_repetition : std::vector<std::vector<double>>{r.loss};
}

void SetSamples(StoredMetric& m, std::vector<double> samples) {
  m.samples = std::move(samples);
  std::vector<double> finite;
  for (double x : m.samples) {
    if (std::isfinite(x)) finite.push_back(x);
  }
  if (finite.empty()) return;  // a launch's own summary stays (an imported median without samples)
  const Summary s = Summarize(finite);
  m.median = s.median;
  m.p10 = s.p10;
  m.p90 = s.p90;
  m.min = s.min;
  m.max = s.max;
}

void AddMetrics(StoredResult& into, const StoredResult& more) {
  for (const auto& theirs : more.metrics) {
    auto mine = std::find_if(into.metrics.begin(), into.metrics.end(),
                             [&](const StoredMetric& m) { return m.name == theirs.name; });
    if (mine == into.metrics.end()) {
      into.metrics.push_back(theirs);
      into.metrics.back().repetition_medians = LaunchMedians(theirs);
      continue;
    }
    std::vector<double> medians = *mine->repetition_medians, samples = mine->samples;
    const std::vector<double> their_medians = LaunchMedians(theirs);
    medians.insert(medians.end(), their_medians.begin(), their_medians.end());
    samples.insert(samples.end(), theirs.samples.begin(), theirs.samples.end());
    mine->repetition_medians = medians;
    SetSamples(*mine, samples);
  }
}

void AddChecks(StoredResult& into, const LaunchResult& more) {
  for (const auto& theirs : more.result.checks) {
    auto mine =
        std::find_if(into.checks.begin(), into.checks.end(), [&](const Check& c) { return c.name == theirs.name; });
    if (mine == into.checks.end()) {
      into.checks.push_back(
          {theirs.name, theirs.passed, theirs.passed ? theirs.detail : more.label + ": " + theirs.detail});
    } else if (mine->passed && !theirs.passed) {
      *mine = {theirs.name, false, more.label + ": " + theirs.detail};
    }
  }
}

// Per-step data, one entry per launch (null: a launch that recorded none).
void AddSteps(StoredResult& into, const StoredResult& more) {
  const auto their_steps = more.per_rank_steps_by_repetition
                               ? *more.per_rank_steps_by_repetition
                               : std::vector<std::optional<RankSteps>>{more.per_rank_steps};
  const auto their_from = more.measured_from_step_by_repetition
                              ? *more.measured_from_step_by_repetition
                              : std::vector<int64_t>{more.measured_from_step.value_or(0)};
  into.per_rank_steps_by_repetition->insert(into.per_rank_steps_by_repetition->end(), their_steps.begin(),
                                            their_steps.end());
  into.measured_from_step_by_repetition->insert(into.measured_from_step_by_repetition->end(), their_from.begin(),
                                                their_from.end());
  auto latest = [](std::optional<int64_t> a, std::optional<int64_t> b) {
    return a || b ? std::optional<int64_t>(std::max(a.value_or(0), b.value_or(0))) : std::nullopt;
  };
  into.steady_state_step = latest(into.steady_state_step, more.steady_state_step);
  into.measured_from_step = latest(into.measured_from_step, more.measured_from_step);
}

// The first launch as a merge of one: every per-launch list explicit.
StoredResult Base(const StoredResult& first) {
  StoredResult base = first;
  for (auto& m : base.metrics) m.repetition_medians = LaunchMedians(m);
  base.repetitions = Launches(first);
  base.loss_by_repetition = LossByLaunch(first);
  if (!first.per_rank_steps_by_repetition) base.per_rank_steps_by_repetition = {{first.per_rank_steps}};
  if (!first.measured_from_step_by_repetition) {
    base.measured_from_step_by_repetition = {{first.measured_from_step.value_or(0)}};
  }
  return base;
}

}  // namespace

int StatusSeverity(const std::string& status) { return status == "ok" ? 0 : status == "failed" ? 1 : 2; }

StoredResult MergeLaunches(const std::vector<LaunchResult>& launches) {
  if (launches.empty()) throw std::invalid_argument("no launches to merge");
  StoredResult merged = Base(launches.front().result);
  for (size_t k = 1; k < launches.size(); ++k) {
    const StoredResult& more = launches[k].result;
    AddMetrics(merged, more);
    AddChecks(merged, launches[k]);
    AddSteps(merged, more);
    if (StatusSeverity(more.status) > StatusSeverity(merged.status)) {
      merged.status = more.status;
      merged.message = more.message;
    }
    const auto losses = LossByLaunch(more);
    merged.loss_by_repetition->insert(merged.loss_by_repetition->end(), losses.begin(), losses.end());
    *merged.repetitions += Launches(more);
    if (more.resumed_from_step) merged.resumed_from_step = more.resumed_from_step;
  }
  // A run without per-step data (an imported benchmark) lists none per launch either.
  const auto& steps = *merged.per_rank_steps_by_repetition;
  if (std::none_of(steps.begin(), steps.end(), [](const auto& s) { return s.has_value(); })) {
    merged.per_rank_steps_by_repetition.reset();
    merged.measured_from_step_by_repetition.reset();
  }
  return merged;
}

}  // namespace shardbench
