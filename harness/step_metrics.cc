#include "harness/step_metrics.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <numeric>

#include "harness/metric_builder_support.h"
#include "reporters/statistics.h"

namespace shardbench::step_metrics {

using namespace metric_support;  // NOLINT: the builders' shared vocabulary

namespace {

// Per step from `from`, the slowest rank's value (ranks step in lockstep: a step lasts as long
// as its slowest rank); per rank, its median.
Metric SlowestPerStep(const MetricRow& row, const MetricInputs& in, std::vector<double> RankRecord::*series,
                      int64_t from) {
  Metric m = DeclaredBy(row);
  for (int64_t s = from; s < in.steps; ++s) {
    std::vector<double> at_step;
    for (const auto& r : in.ranks) at_step.push_back((r.*series)[s]);
    m.samples.push_back(Max(at_step));
  }
  for (const auto& r : in.ranks)
    m.per_rank.push_back(Median(std::vector<double>((r.*series).begin() + from, (r.*series).end())));
  return m;
}
// Global tokens over the slowest rank's step; `per_rank_share`: divided by the world size.
void Tokens(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out, bool per_rank_share) {
  Metric m = DeclaredBy(row);
  const double global = static_cast<double>(in.facts.global_tokens);
  const Metric step = SlowestPerStep(row, in, &RankRecord::step_seconds, in.from);
  for (double slowest : step.samples)
    m.samples.push_back(per_rank_share ? global / in.world / slowest : global / slowest);
  for (double median : step.per_rank) m.per_rank.push_back(global / in.world / median);
  out.push_back(m);
}
// The mean of the faster half of `values` (the upper half when sorted; the middle one counts
// when odd): the launch's throughput with the slow mode of bimodal steps left out.
double FasterHalfMean(std::vector<double> values) {
  std::sort(values.begin(), values.end(), std::greater<>());
  const size_t half = (values.size() + 1) / 2;
  return std::accumulate(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half), 0.0) /
         static_cast<double>(half);
}
// Over all ranks' communication per step (1 - exposed / total); per rank over its steps.
Metric OverlapRatio(const MetricRow& row, const MetricInputs& in, std::vector<double> RankRecord::*comm,
                    std::vector<double> RankRecord::*exposed, int64_t from) {
  Metric m = DeclaredBy(row);
  for (int64_t s = from; s < in.steps; ++s) {
    double c = 0, e = 0;
    for (const auto& r : in.ranks) c += (r.*comm)[s];
    for (const auto& r : in.ranks) e += (r.*exposed)[s];
    m.samples.push_back(c > 0 ? 1.0 - e / c : 1.0);
  }
  for (const auto& r : in.ranks) {
    const double c = std::accumulate((r.*comm).begin() + from, (r.*comm).end(), 0.0);
    const double e = std::accumulate((r.*exposed).begin() + from, (r.*exposed).end(), 0.0);
    m.per_rank.push_back(c > 0 ? 1.0 - e / c : 1.0);
  }
  return m;
}

}  // namespace

void StepTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(SlowestPerStep(row, in, &RankRecord::step_seconds, in.from));
}
// Per measured step, the slowest rank's step time over the ranks' mean calibration time right
// after it: the step in units of the machine's speed at that moment.
void StepTimeCalibrated(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Metric m = DeclaredBy(row);
  std::vector<std::vector<double>> per_rank(in.ranks.size());
  for (int64_t s = in.from; s < in.steps; ++s) {
    double slowest = 0, calibration = 0;
    for (const auto& r : in.ranks) {
      slowest = std::max(slowest, r.step_seconds[s]);
      calibration += r.calibration_seconds[s] / in.world;
    }
    m.samples.push_back(slowest / calibration);
    for (size_t i = 0; i < in.ranks.size(); ++i) {
      per_rank[i].push_back(in.ranks[i].step_seconds[s] / in.ranks[i].calibration_seconds[s]);
    }
  }
  for (auto& v : per_rank) m.per_rank.push_back(Median(std::move(v)));
  out.push_back(std::move(m));
}
void GradSyncTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(SlowestPerStep(row, in, &RankRecord::grad_sync_seconds, in.from));
}
void TokensPerS(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) { Tokens(row, in, out, false); }
// One figure per launch: on a shared runner the steps a neighbour or the other rank's threads
// slowed form a second, slower mode, and how many land there varies launch to launch; the
// faster half moves least (ci/gate-quality.sh spread measured it: README "Gate quality").
void TokensPerSFastHalf(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Metric m = DeclaredBy(row);
  const double global = static_cast<double>(in.facts.global_tokens);
  const Metric step = SlowestPerStep(row, in, &RankRecord::step_seconds, in.from);
  std::vector<double> tokens;
  for (double slowest : step.samples) tokens.push_back(global / slowest);
  if (tokens.empty()) return;
  m.samples = {FasterHalfMean(tokens)};
  for (const auto& r : in.ranks) {
    std::vector<double> own;
    for (int64_t s = in.from; s < in.steps; ++s) own.push_back(global / in.world / r.step_seconds[s]);
    m.per_rank.push_back(FasterHalfMean(own));
  }
  out.push_back(std::move(m));
}
void TokensPerSPerRank(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Tokens(row, in, out, true);
}
void OptimizerShare(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Metric m = DeclaredBy(row);
  for (int64_t s = in.from; s < in.steps; ++s) {
    std::vector<double> shares;
    for (const auto& r : in.ranks) shares.push_back(r.optimizer_seconds[s] / r.step_seconds[s]);
    m.samples.push_back(std::accumulate(shares.begin(), shares.end(), 0.0) / in.world);
  }
  for (const auto& r : in.ranks) {
    double share = 0;
    for (int64_t s = in.from; s < in.steps; ++s) share += r.optimizer_seconds[s] / r.step_seconds[s];
    m.per_rank.push_back(share / static_cast<double>(in.steps - in.from));
  }
  out.push_back(m);
}
// Ranks step in lockstep, so a straggler lengthens every rank's step: its peers wait for it in
// their collectives. Busy time (step time minus time blocked in collectives) tells it apart.
void StepTimeBusy(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  auto busy = [](const RankRecord& r, int64_t s) { return r.step_seconds[s] - r.comm_wait_seconds[s]; };
  Metric m = DeclaredBy(row);
  for (int64_t s = in.from; s < in.steps; ++s) {
    std::vector<double> at_step;
    for (const auto& r : in.ranks) at_step.push_back(busy(r, s));
    m.samples.push_back(Max(at_step));
  }
  for (const auto& r : in.ranks) {
    std::vector<double> v;
    for (int64_t s = in.from; s < in.steps; ++s) v.push_back(busy(r, s));
    m.per_rank.push_back(Percentile(v, 50));
  }
  out.push_back(m);
}
// The busiest rank's median busy time over the median rank's (1 when all are alike).
void StragglerRatio(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  const Metric* busy = Built(out, "step_time_busy");
  if (!busy) return;
  Metric m = DeclaredBy(row);
  const double typical = Percentile(busy->per_rank, 50);
  for (double b : busy->per_rank) m.per_rank.push_back(b / typical);
  // max/median of one rank is exactly 1 (not a rounding of b/b twice).
  m.samples = {in.ranks.size() == 1 ? 1.0 : Max(busy->per_rank) / typical};
  out.push_back(m);
}
void KernelCommTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(SlowestPerStep(row, in, &RankRecord::kernel_comm_seconds, in.warmup));
}
void KernelExposedCommTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(SlowestPerStep(row, in, &RankRecord::kernel_exposed_seconds, in.warmup));
}
void KernelComputeTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(SlowestPerStep(row, in, &RankRecord::kernel_compute_seconds, in.warmup));
}
void KernelOverlapRatio(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(
      OverlapRatio(row, in, &RankRecord::kernel_comm_seconds, &RankRecord::kernel_exposed_seconds, in.warmup));
}
// The same three figures from the ranks' spans (harness/rank_trace.h), over SpansFrom's window.
void CommExposedTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(SlowestPerStep(row, in, &RankRecord::span_exposed_seconds, SpansFrom(in)));
}
void CommOverlapRatio(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(
      OverlapRatio(row, in, &RankRecord::span_comm_seconds, &RankRecord::span_exposed_seconds, SpansFrom(in)));
}
void RankIdleTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(SlowestPerStep(row, in, &RankRecord::span_idle_seconds, SpansFrom(in)));
}

}  // namespace shardbench::step_metrics
