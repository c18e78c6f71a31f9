// The results of one scenario instance: plain data (schema v1: reporters/results.schema.json).
// Reporters are pure functions of it; gates read it and never rerun anything.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/common/durable_file.h"  // WriteFileAtomically, for results

namespace shardbench {

constexpr int kResultsSchemaVersion = 1;

struct Metric {
  std::string name;    // "tokens_per_s"
  std::string unit;    // "tokens/s", "s", "bytes", "count"
  std::string better;  // "lower" | "higher"
  std::string kind;    // "exact" (deterministic, zero-tolerance gates) | "sampled"
  std::vector<double> samples;   // one per measured step (or per repetition)
  std::vector<double> per_rank;  // this metric's value on each rank (median for sampled)
};

struct Check {
  std::string name;
  bool passed = false;
  std::string detail;
};

// A metric the engine under test does not measure, and why: listed in the result instead of being
// written as a zero (a peer engine's figures that PyTorch does not expose, or that its version
// lacks the hook for).
struct NotMeasured {
  std::string name;
  std::string why;
};

struct RankMemory {
  int rank = 0;
  std::map<std::string, int64_t> categories;        // bytes per category at the peak (names: docs/architecture.md)
  std::map<std::string, int64_t> peak_by_category;  // each category's own peak
  std::map<std::string, int64_t> held;              // what the engine holds between steps (exact)
  // Allocator peaks (bytes) over the measured steps; absent when not measured (reserved: GPU only).
  std::optional<int64_t> peak_allocated;
  std::optional<int64_t> peak_reserved;
  std::optional<int64_t> host_rss_peak;  // VmHWM of the rank's process over training (null: not measured)
};

struct RunResult {
  std::string run_id;
  std::string started_at;  // ISO 8601 UTC
  nlohmann::json provenance;
  nlohmann::json scenario;  // {name, config (fully resolved), matrix}
  std::string status = "ok";  // "ok" | "failed" (a check failed) | "error" (could not run)
  std::string message;
  std::vector<Metric> metrics;
  std::vector<RankMemory> memory;
  std::vector<Check> checks;
  std::vector<double> loss;  // global loss per step, warmup included
  // Per rank, per step (warmup included): step time and the part of it spent blocked in
  // collectives (written as per_rank_steps; empty when the run did not train).
  std::vector<std::vector<double>> rank_step_seconds, rank_comm_wait_seconds;
  // Where the slowest rank's step times settle (reporters/steady_state.h), and the first step
  // the step-time metrics sample (train.warmup_steps, or the steady state for warmup auto).
  std::optional<int64_t> steady_state_step, measured_from_step;
  // A restarted job (torchrun --max-restarts) continued this run from the checkpoint an earlier
  // attempt saved after this many steps; the steps before were measured by that attempt.
  std::optional<int64_t> resumed_from_step;
  nlohmann::json memory_model;  // predicted beside measured (rank 0), or null
  std::vector<NotMeasured> not_measured;  // metrics of the table this engine did not measure
  // First lines of the warnings the peer's libraries raised (PyTorch's gradient-memory warning
  // for mixed units, say): often the first sign of the regression the run measures.
  std::vector<std::string> peer_warnings;
};

nlohmann::json ToJson(const RunResult& r);
// A metric's summary (median, p10, p90, min, max) is computed from its samples here.
nlohmann::json ToJson(const Metric& m);
nlohmann::json ToJson(const RankMemory& m);

}  // namespace shardbench
