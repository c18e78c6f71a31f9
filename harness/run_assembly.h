// The one place a finished instance's result is put together from its ranks' records, for every
// engine: ours (harness/scenario_runner.cc, on rank 0) and a peer's (harness/peer_launch.cc,
// from the records PyTorch's ranks wrote). Same metric table, same memory section and memory
// model beside it, same checks around the engine's own: a peer is measured and judged exactly as
// our engines are, and what it does not measure is named, never written as zero.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/metric_table.h"
#include "harness/rank_record.h"
#include "harness/scenario/scenario.h"
#include "reporters/run_result.h"

namespace shardbench {

// What a finished run knows besides its ranks' records.
struct RunFrame {
  std::string run_id, started_at;
  nlohmann::json provenance;
  RunFacts facts;  // step_metrics_from and trainable_bytes are set here from the scenario and records
  int64_t trainable_bytes = 0;  // all trainable parameters' bytes (grad_blowup, grad_memory)
  // The checks the run made itself (learning, loss_parity, frozen_dtype, the checkpoint checks):
  // `finite` and the threshold checks are added, all in harness/check_table.h's order.
  std::vector<Check> checks;
  std::optional<int64_t> resumed_from_step;
  // Metrics the engine does not measure, with why (a peer's). A figure recorded as NaN is not
  // measured either: its metric is left out and listed, with the reason given here if any.
  std::map<std::string, std::string> not_measured;
  // Metrics the table declares exact that vary from launch to launch on this engine, with why
  // (a peer's allocator peak: Gloo's threads free their buffers when they finish): written as
  // sampled, so that gates test them statistically instead of at zero tolerance.
  std::map<std::string, std::string> sampled_here;
  std::vector<std::string> peer_warnings;
  // A peer engine's records: any NaN figure is one it did not measure (ours: only those named).
  bool peer = false;
};

RunResult AssembleRunResult(const Scenario& s, const std::vector<RankRecord>& all, RunFrame frame);
// The result's status and message from its checks, the one place a failed check's words are
// built ("check 'X' failed: detail", joined by "; "): ok when every check passed, else failed.
void JudgeChecks(RunResult& r);

// The result's scenario block: name, source, the fully resolved config, overrides, matrix.
nlohmann::json ScenarioBlock(const Scenario& s);

// Moves the metrics with a NaN sample or per-rank value (a figure not measured) out of
// `metrics`, into the list returned, each with its reason from `why` (or a generic one); with
// `only_named`, only those `why` names (our engines: any other NaN is a bug to show, not hide).
std::vector<NotMeasured> TakeUnmeasured(std::vector<Metric>& metrics, const std::map<std::string, std::string>& why,
                                        bool only_named = false);

}  // namespace shardbench
