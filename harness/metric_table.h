// Every metric a run reports, declared once: name, kind, unit, better direction and how it is
// measured. The rank record packs the per-rank figures the table names (harness/rank_record.h),
// and BuildMetrics turns the gathered records into the result's metrics row by row, in the
// table's order (the order results/<instance>.json lists them). Adding a metric: a row here,
// and where it is measured (a RankRecord field the runner fills, or a builder below).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/rank_record.h"
#include "reporters/run_result.h"

namespace shardbench {

// What the run knows besides the records: the windows the step metrics sample and the figures
// of the whole run. Unset optionals leave their metrics out.
struct RunFacts {
  int64_t warmup_steps = 0;                   // the windows that reset after warmup (kernel trace)
  std::optional<int64_t> step_metrics_from;   // the step-time metrics' first step (default: warmup)
  int64_t global_tokens = 0, params_total = 0, params_trainable = 0;
  std::optional<double> flops_per_token;      // model FLOPs per token (engine/profile/model_flops.h)
  std::optional<double> matmul_peak;          // GPU runs: the bf16 matmul peak this device reaches
  std::optional<double> datasheet_peak;       // GPU runs: the device's datasheet bf16 peak, when known
  std::optional<int64_t> trainable_bytes;     // all trainable parameters' bytes (grad_blowup)
};

// When a row is reported.
enum class When {
  kAlways,
  kStepsMeasured,     // some step after the step metrics' first
  kKernelTraced,      // profile.kernel_trace recorded the measured steps
  kSpansRecorded,     // collectives on a host thread had spans over the measured steps (Gloo)
  kGpuRun,            // the CUDA allocator's statistics were read
  kCheckpointSaved,   // checkpoint.save_step
  kCheckpointLoaded,  // a check loaded the checkpoint
  kCommunicated,      // a communicator counted collectives
  kFlopsKnown,        // RunFacts::flops_per_token
  kMatmulCalibrated,  // RunFacts::matmul_peak
  kDatasheetKnown,    // RunFacts::datasheet_peak
  kOwnsTrainable,     // RunFacts::trainable_bytes, and ranks own some
  kInstructionsCounted,  // profile.instructions counted the measured steps
  kCalibrated,           // timing.calibrate timed the kernel after every measured step
};

struct MetricInputs;
struct MetricRow;
using MetricBuilder = void (*)(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);

struct MetricRow {
  const char* name;    // "{dtype}", "{collective}": one metric per stored dtype / collective used
  const char* kind;    // "exact" (deterministic) | "sampled"
  const char* unit;    // "s", "bytes", "count", "ratio", ...
  const char* better;  // "lower" | "higher"
  When when;
  // A figure every rank records, packed with its record (null: none).
  double RankRecord::*field;
  // Makes the metric from the records and the run's facts; null: from `field`, samples {the
  // largest rank's}, per_rank each rank's.
  MetricBuilder build;
  const char* how;     // how it is measured
};

// The table, in report order.
const std::vector<MetricRow>& MetricTable();
// An empty metric with the declaration of the row named `name` (InfraError when undeclared).
Metric Declared(const std::string& name);
// Whether some row reports a metric named `name`: its name, or its pattern filled in
// ("comm_all_gather_time" for "comm_{collective}_time").
bool IsTableMetric(const std::string& name);

std::vector<Metric> BuildMetrics(const std::vector<RankRecord>& ranks, const RunFacts& facts);
// The record-only metrics (no model FLOPs, device peaks or gradient blowup): `warmup_steps`
// bounds the windows that reset after warmup (kernel trace); the step-time metrics (step time,
// tokens/s, optimizer share, grad sync, straggler ratio, busy time) sample the steps from
// `step_metrics_from` (warmup auto: the detected steady state; default: warmup).
std::vector<Metric> BuildMetrics(const std::vector<RankRecord>& ranks, int64_t warmup_steps, int64_t global_tokens,
                                 int64_t params_total, int64_t params_trainable,
                                 std::optional<int64_t> step_metrics_from = std::nullopt);

}  // namespace shardbench
