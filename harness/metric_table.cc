#include "harness/metric_table.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <numeric>

#include "engine/common/error.h"
#include "engine/shard/mixed_precision.h"
#include "harness/metric_builder_support.h"
#include "harness/step_metrics.h"
#include "reporters/statistics.h"

namespace shardbench {

namespace {

using namespace metric_support;  // NOLINT: the builders' shared vocabulary
using namespace step_metrics;     // NOLINT: the step-time builders the table names

constexpr size_t kCollectives = static_cast<size_t>(comm::Collective::kCount);

const MetricRow& Row(const std::string& name) {
  for (const MetricRow& row : MetricTable()) {
    if (name == row.name) return row;
  }
  throw InfraError("metric '" + name + "' is not declared in harness/metric_table.cc");
}

std::vector<double> PerRank(const MetricInputs& in, double (*of)(const RankRecord&, size_t), size_t i = 0) {
  std::vector<double> v;
  for (const auto& r : in.ranks) v.push_back(of(r, i));
  return v;
}
// samples {the largest rank's}, per_rank each rank's: exact for byte and count figures.
Metric LargestRank(Metric m, std::vector<double> per_rank) {
  m.samples = {Max(per_rank)};
  m.per_rank = std::move(per_rank);
  return m;
}

// ---- Builders: each row whose metric is not simply one recorded figure per rank. ----

void ParamsTotal(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Metric m = DeclaredBy(row);
  m.samples = {static_cast<double>(in.facts.params_total)};
  out.push_back(m);
}
void ParamsTrainable(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Metric m = DeclaredBy(row);
  m.samples = {static_cast<double>(in.facts.params_trainable)};
  out.push_back(m);
}
void ParamBytesByDtype(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  for (size_t d = 0; d < kStorageDtypes.size(); ++d) {  // the dtypes some rank holds
    auto bytes = PerRank(in, [](const RankRecord& r, size_t i) { return r.param_bytes_by_dtype[i]; }, d);
    if (Max(bytes) > 0) {
      out.push_back(LargestRank(DeclaredBy(row, std::string("param_bytes_") + shard::DtypeName(kStorageDtypes[d])), bytes));
    }
  }
}
// From the engine's memory record, per rank (exact, from its tensors and gauges): the bytes it
// holds in categories `cs` between steps / its gauge's peak in category `c`.
using memory::Category;
template <Category... cs>
void Held(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(LargestRank(DeclaredBy(row), PerRank(in, [](const RankRecord& r, size_t) { return (r.held(cs) + ...); })));
}
template <Category c>
void Peak(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(LargestRank(DeclaredBy(row), PerRank(in, [](const RankRecord& r, size_t) { return r.peak(c); })));
}
void DeviceFragmentation(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  out.push_back(LargestRank(DeclaredBy(row), PerRank(in, [](const RankRecord& r, size_t) {
    return r.device_reserved_peak - r.device_allocated_peak;
  })));
}
// The whole checkpoint's bytes; per rank, what each rank wrote.
void CheckpointBytes(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Metric m = DeclaredBy(row);
  m.samples = {in.ranks[0].checkpoint_bytes_total};
  m.per_rank = PerRank(in, [](const RankRecord& r, size_t) { return r.checkpoint_bytes; });
  out.push_back(m);
}
// Count, bytes and time of every collective some rank ran, collective by collective.
void CommByCollective(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  for (size_t c = 0; c < kCollectives; ++c) {
    const std::string name = comm::CollectiveName(static_cast<comm::Collective>(c));
    auto counts = PerRank(in, [](const RankRecord& r, size_t i) { return r.comm_counts[i]; }, c);
    if (Max(counts) == 0) continue;
    out.push_back(LargestRank(DeclaredBy(row, "comm_" + name + "_count"), counts));
    out.push_back(LargestRank(DeclaredBy(Row("comm_{collective}_bytes"), "comm_" + name + "_bytes"),
                              PerRank(in, [](const RankRecord& r, size_t i) { return r.comm_bytes[i]; }, c)));
    out.push_back(LargestRank(DeclaredBy(Row("comm_{collective}_time"), "comm_" + name + "_time"),
                              PerRank(in, [](const RankRecord& r, size_t i) { return r.comm_seconds[i]; }, c)));
  }
}
void BuiltWithTheRowAbove(const MetricRow&, const MetricInputs&, std::vector<Metric>&) {}
void ModelFlopsPerToken(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Metric m = DeclaredBy(row);
  m.samples = {*in.facts.flops_per_token};
  out.push_back(m);
}
void AchievedFlops(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  const Metric* tokens = Built(out, "tokens_per_s");
  if (!tokens) return;
  Metric m = DeclaredBy(row);
  for (double t : tokens->samples) m.samples.push_back(t * *in.facts.flops_per_token);
  for (double t : tokens->per_rank) m.per_rank.push_back(t * *in.facts.flops_per_token);
  out.push_back(m);
}
void MatmulPeak(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  Metric m = DeclaredBy(row);
  m.samples = {*in.facts.matmul_peak};
  out.push_back(m);
}
// The model FLOPs all ranks achieve over world size times one device's peak.
void MfuAgainst(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out, double device_peak) {
  const Metric* achieved = Built(out, "achieved_flops_per_s");
  if (!achieved) return;
  Metric m = DeclaredBy(row);
  for (double a : achieved->samples) m.samples.push_back(a / (device_peak * in.world));
  out.push_back(m);
}
void Mfu(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) { MfuAgainst(row, in, out, *in.facts.matmul_peak); }
void MfuDatasheet(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  MfuAgainst(row, in, out, *in.facts.datasheet_peak);
}
// Gradient bytes a rank holds over the trainable bytes it owns (trainable bytes / world size):
// suites/catalog.yaml case 1's measure, which the grad_memory check judges (harness/check_table.h).
void GradBlowupMetric(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out) {
  const double owned = static_cast<double>(*in.facts.trainable_bytes) / in.world;
  Metric m = DeclaredBy(row);
  double worst = 0;  // a rank whose bytes were not measured (NaN) shows in per_rank, not here
  for (const RankRecord& r : in.ranks) {
    m.per_rank.push_back(r.held(memory::Category::kGrads) / owned);
    worst = std::max(worst, r.held(memory::Category::kGrads));
  }
  m.samples = {worst / owned};
  out.push_back(m);
}

bool Applies(When when, const MetricInputs& in) {
  const RankRecord& first = in.ranks[0];
  switch (when) {
    case When::kAlways: return true;
    case When::kStepsMeasured: return in.from < in.steps;
    case When::kKernelTraced: return in.warmup < in.steps && first.kernel_comm_seconds[in.warmup] >= 0;
    case When::kSpansRecorded:
      return SpansFrom(in) < in.steps && first.span_comm_seconds[SpansFrom(in)] >= 0 && !first.comm_counts.empty();
    case When::kGpuRun: return first.device_allocated_peak >= 0;
    case When::kCheckpointSaved: return first.checkpoint_save_seconds >= 0;
    case When::kCheckpointLoaded: return first.checkpoint_load_seconds >= 0;
    case When::kCommunicated: return !first.comm_counts.empty();
    case When::kFlopsKnown: return in.facts.flops_per_token.has_value();
    case When::kMatmulCalibrated: return in.facts.matmul_peak.has_value();
    case When::kDatasheetKnown: return in.facts.datasheet_peak.has_value();
    case When::kInstructionsCounted: return first.instructions_per_step >= 0;
    case When::kCalibrated: return in.from < in.steps && first.calibration_seconds[in.from] > 0;
    case When::kOwnsTrainable: return in.facts.trainable_bytes && static_cast<double>(*in.facts.trainable_bytes) / in.world > 0;
  }
  return false;
}

// The table, in report order. Rows without a builder are one figure per rank (a RankRecord
// field the runner fills, harness/scenario_runner.cc): samples {the largest rank's}, per_rank
// each rank's.
using R = RankRecord;
using W = When;
constexpr MetricRow kTable[] = {
    // name, kind, unit, better, when, field, builder, how measured
    {"step_time", "sampled", "s", "lower", W::kAlways, nullptr, StepTime,
     "per measured step the slowest rank's step time (ranks step in lockstep); per rank its median"},
    {"tokens_per_s", "sampled", "tokens/s", "higher", W::kAlways, nullptr, TokensPerS,
     "per measured step the global batch's tokens over the slowest rank's step time"},
    {"tokens_per_s_fast_half", "sampled", "tokens/s", "higher", W::kStepsMeasured, nullptr, TokensPerSFastHalf,
     "one figure a launch: the mean of tokens_per_s over the faster half of the measured steps (what the nightly "
     "gates: the least spread launch to launch on a shared runner)"},
    {"tokens_per_s_per_rank", "sampled", "tokens/s", "higher", W::kAlways, nullptr, TokensPerSPerRank,
     "tokens_per_s over the world size"},
    {"step_time_calibrated", "sampled", "calibrations", "lower", W::kCalibrated, nullptr, StepTimeCalibrated,
     "per measured step the slowest rank's step time over the ranks' mean time of the calibration kernel run right "
     "after it (timing.calibrate): the machine's speed of the moment divided out"},
    {"optimizer_share", "sampled", "ratio", "lower", W::kAlways, nullptr, OptimizerShare,
     "per measured step the ranks' mean of optimizer time over step time"},
    {"grad_sync_time", "sampled", "s", "lower", W::kAlways, nullptr, GradSyncTime,
     "per measured step the slowest rank's gradient synchronisation time"},
    {"step_time_busy", "sampled", "s", "lower", W::kStepsMeasured, nullptr, StepTimeBusy,
     "step time minus the time blocked in collectives: per step the busiest rank, per rank its median"},
    {"straggler_ratio", "sampled", "ratio", "lower", W::kStepsMeasured, nullptr, StragglerRatio,
     "the busiest rank's median busy time over the median rank's"},
    {"comm_exposed_time", "sampled", "s", "lower", W::kSpansRecorded, nullptr, CommExposedTime,
     "per measured step the rank with the most: time a collective was in flight (Gloo's thread) while the rank's "
     "trainer thread computed nothing (it waited, or was between spans); per rank its median"},
    {"comm_overlap_ratio", "sampled", "ratio", "higher", W::kSpansRecorded, nullptr, CommOverlapRatio,
     "1 - exposed / total collective time in flight, over all ranks per step (1: all hidden behind compute)"},
    {"rank_idle_time", "sampled", "s", "lower", W::kSpansRecorded, nullptr, RankIdleTime,
     "per measured step the idlest rank's time with neither compute nor a collective in flight"},
    {"kernel_comm_time", "sampled", "s", "lower", W::kKernelTraced, nullptr, KernelCommTime,
     "CUPTI kernel trace: per step after warmup the slowest rank's time some communication kernel ran"},
    {"kernel_exposed_comm_time", "sampled", "s", "lower", W::kKernelTraced, nullptr, KernelExposedCommTime,
     "the part of kernel_comm_time no compute kernel overlapped"},
    {"kernel_compute_time", "sampled", "s", "lower", W::kKernelTraced, nullptr, KernelComputeTime,
     "per step the slowest rank's compute kernel time"},
    {"kernel_overlap_ratio", "sampled", "ratio", "higher", W::kKernelTraced, nullptr, KernelOverlapRatio,
     "1 - exposed / total communication time, over all ranks per step"},
    {"instructions_per_step", "exact", "instructions", "lower", W::kInstructionsCounted, &R::instructions_per_step, nullptr,
     "instructions a rank executed per measured step, every thread, counted by valgrind's callgrind "
     "(profile.instructions; one intra-op thread); deterministic to within what the README's gate quality measured"},
    {"init_time", "sampled", "s", "lower", W::kAlways, &R::init_seconds, nullptr,
     "start of the run to the engine set up (building, loading and sharding the model)"},
    {"init_time_connect", "sampled", "s", "lower", W::kAlways, &R::connect_seconds, nullptr,
     "connecting the ranks (it waits for the last rank to start: launch skew included)"},
    {"init_time_construct", "sampled", "s", "lower", W::kAlways, &R::construct_seconds, nullptr,
     "allocating and initialising the model (checkpoint reads excluded)"},
    {"init_time_load", "sampled", "s", "lower", W::kAlways, &R::load_seconds, nullptr, "reading checkpoint weights"},
    {"init_time_shard", "sampled", "s", "lower", W::kAlways, &R::shard_seconds, nullptr,
     "setting up the engine under test (meta init: its reads counted as load)"},
    {"time_to_first_step", "sampled", "s", "lower", W::kAlways, &R::time_to_first_step, nullptr,
     "start of the run to the end of step 1, the learning check's fingerprints excluded"},
    {"params_total", "exact", "count", "lower", W::kAlways, nullptr, ParamsTotal, "parameters of the model"},
    {"params_trainable", "exact", "count", "lower", W::kAlways, nullptr, ParamsTrainable, "parameters that require grad"},
    {"param_bytes", "exact", "bytes", "lower", W::kAlways, nullptr, Held<Category::kParamsSharded, Category::kParamsUnsharded>,
     "parameter bytes the engine holds between steps, sharded and unsharded, from its tensors"},
    {"param_bytes_{dtype}", "exact", "bytes", "lower", W::kAlways, nullptr, ParamBytesByDtype,
     "param_bytes by stored dtype (only the dtypes some rank holds)"},
    {"params_unsharded_peak_bytes", "exact", "bytes", "lower", W::kAlways, nullptr, Peak<Category::kParamsUnsharded>,
     "the engine's peak of unsharded (gathered) parameter bytes over the measured steps"},
    {"grad_bytes", "exact", "bytes", "lower", W::kAlways, nullptr, Held<Category::kGrads>,
     "gradient bytes the engine holds after the last step"},
    {"grads_unsharded_peak_bytes", "exact", "bytes", "lower", W::kAlways, nullptr, Peak<Category::kGrads>,
     "the engine's peak of unsharded gradient bytes over the measured steps"},
    {"optim_state_bytes", "exact", "bytes", "lower", W::kAlways, nullptr, Held<Category::kOptimState>,
     "optimizer state bytes (AdamW moments)"},
    {"buffer_bytes", "exact", "bytes", "lower", W::kAlways, &R::buffer_bytes, nullptr,
     "the model's buffers a rank holds (rotary inv_freq; no checkpoint holds them), one count per storage"},
    {"peak_allocated", "exact", "bytes", "lower", W::kAlways, &R::tracked_peak, nullptr,
     "the tracking allocator's peak over the measured steps (a save's window included)"},
    {"init_peak_bytes", "exact", "bytes", "lower", W::kAlways, &R::init_peak_bytes, nullptr,
     "the tracking allocator's peak while building, loading and sharding the model"},
    {"checkpoint_bytes_read", "exact", "bytes", "lower", W::kAlways, &R::checkpoint_bytes_read, nullptr,
     "bytes read from the model's checkpoint at init"},
    {"host_rss_peak", "sampled", "bytes", "lower", W::kAlways, &R::rss_peak_bytes, nullptr,
     "the process's VmHWM at the end of training, restarted when warmup ended (Linux: clear_refs 5): training's "
     "host peak, init's excluded (RSS still held then included)"},
    {"init_host_rss_peak", "sampled", "bytes", "lower", W::kAlways, &R::init_rss_peak_bytes, nullptr,
     "the process's VmHWM when init ended (the runtime's own baseline included): init's host peak, "
     "as a Python peer measures it too"},
    {"device_allocated_peak", "exact", "bytes", "lower", W::kGpuRun, &R::device_allocated_peak, nullptr,
     "the CUDA caching allocator's allocated-bytes peak over the measured steps"},
    {"device_active_peak", "exact", "bytes", "lower", W::kGpuRun, &R::device_active_peak, nullptr,
     "the CUDA caching allocator's active-bytes peak over the measured steps"},
    {"device_reserved_peak", "sampled", "bytes", "lower", W::kGpuRun, &R::device_reserved_peak, nullptr,
     "the CUDA caching allocator's reserved-bytes peak (depends on how the cache split blocks)"},
    {"device_fragmentation_peak", "sampled", "bytes", "lower", W::kGpuRun, nullptr, DeviceFragmentation,
     "device_reserved_peak - device_allocated_peak"},
    {"device_alloc_retries", "exact", "count", "lower", W::kGpuRun, &R::device_alloc_retries, nullptr,
     "cudaMalloc failures the cache freed blocks and retried after"},
    {"device_ooms", "exact", "count", "lower", W::kGpuRun, &R::device_ooms, nullptr, "out-of-memory errors"},
    {"checkpoint_save_time", "sampled", "s", "lower", W::kCheckpointSaved, &R::checkpoint_save_seconds, nullptr,
     "the save at checkpoint.save_step, between steps"},
    {"checkpoint_bytes", "exact", "bytes", "lower", W::kCheckpointSaved, &R::checkpoint_bytes, CheckpointBytes,
     "the whole checkpoint's bytes; per rank, the bytes each rank wrote"},
    {"checkpoint_save_peak_bytes", "exact", "bytes", "lower", W::kCheckpointSaved, &R::checkpoint_save_peak_bytes, nullptr,
     "tracked host bytes the save allocated above its starting level, at their peak"},
    {"checkpoint_load_time", "sampled", "s", "lower", W::kCheckpointLoaded, &R::checkpoint_load_seconds, nullptr,
     "loading the checkpoint into a fresh model and engine (state_dict_roundtrip, resume)"},
    {"comm_{collective}_count", "exact", "count", "lower", W::kCommunicated, nullptr, CommByCollective,
     "calls of each collective some rank ran, over the measured steps"},
    {"comm_{collective}_bytes", "exact", "bytes", "lower", W::kCommunicated, nullptr, BuiltWithTheRowAbove,
     "bytes each collective moved (with comm_{collective}_count, collective by collective)"},
    {"comm_{collective}_time", "sampled", "s", "lower", W::kCommunicated, nullptr, BuiltWithTheRowAbove,
     "seconds in each collective (with comm_{collective}_count, collective by collective)"},
    {"model_flops_per_token", "exact", "FLOPs", "lower", W::kFlopsKnown, nullptr, ModelFlopsPerToken,
     "from the shapes (engine/profile/model_flops.h)"},
    {"achieved_flops_per_s", "sampled", "FLOP/s", "higher", W::kFlopsKnown, nullptr, AchievedFlops,
     "tokens_per_s times model_flops_per_token"},
    {"matmul_peak_flops_per_s", "sampled", "FLOP/s", "higher", W::kMatmulCalibrated, nullptr, MatmulPeak,
     "a bf16 8192^3 matmul on this device, after the run"},
    {"mfu", "sampled", "ratio", "higher", W::kMatmulCalibrated, nullptr, Mfu,
     "achieved_flops_per_s over world size x matmul_peak_flops_per_s"},
    {"mfu_datasheet", "sampled", "ratio", "higher", W::kDatasheetKnown, nullptr, MfuDatasheet,
     "achieved_flops_per_s over world size x the datasheet's bf16 peak"},
    {"grad_blowup", "exact", "ratio", "lower", W::kOwnsTrainable, nullptr, GradBlowupMetric,
     "gradient bytes a rank holds over the trainable bytes it owns (trainable bytes / world size)"},
};

}  // namespace

const std::vector<MetricRow>& MetricTable() {
  static const std::vector<MetricRow> table(std::begin(kTable), std::end(kTable));
  return table;
}

Metric Declared(const std::string& name) { return DeclaredBy(Row(name)); }

bool IsTableMetric(const std::string& name) {
  for (const MetricRow& row : MetricTable()) {
    const std::string pattern = row.name;
    const size_t open = pattern.find('{'), close = pattern.find('}');
    if (open == std::string::npos) {
      if (name == pattern) return true;
      continue;
    }
    const std::string prefix = pattern.substr(0, open), suffix = pattern.substr(close + 1);
    if (name.size() > prefix.size() + suffix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return true;
    }
  }
  return false;
}

std::vector<Metric> BuildMetrics(const std::vector<RankRecord>& ranks, const RunFacts& facts) {
  const int64_t steps = static_cast<int64_t>(ranks[0].step_seconds.size());
  // A run that stopped during warmup (it diverged) took fewer steps than the windows start at.
  const int64_t warmup = std::min(facts.warmup_steps, steps);
  const MetricInputs in{ranks, facts, steps, warmup, std::min(facts.step_metrics_from.value_or(warmup), steps),
                        static_cast<double>(ranks.size())};
  std::vector<Metric> out;
  for (const MetricRow& row : MetricTable()) {
    if (!Applies(row.when, in)) continue;
    if (row.build) {
      row.build(row, in, out);
    } else {
      std::vector<double> v;
      for (const auto& r : ranks) v.push_back(r.*row.field);
      out.push_back(LargestRank(DeclaredBy(row), v));
    }
  }
  return out;
}

std::vector<Metric> BuildMetrics(const std::vector<RankRecord>& ranks, int64_t warmup_steps, int64_t global_tokens,
                                 int64_t params_total, int64_t params_trainable, std::optional<int64_t> step_metrics_from) {
  RunFacts facts;
  facts.warmup_steps = warmup_steps;
  facts.step_metrics_from = step_metrics_from;
  facts.global_tokens = global_tokens;
  facts.params_total = params_total;
  facts.params_trainable = params_trainable;
  return BuildMetrics(ranks, facts);
}

}  // namespace shardbench
