// The one reader of what `shardbench run`, `merge` and the peer engine write: a result file
// (reporters/run_result.h's ToJson, plus what merging launches adds) and a run's index.json,
// read into typed structs. Every field read is type-checked; a missing required field or a
// wrong type is an InputError naming the file and the field path
// ("runs/x/result.json: field "metrics.step_time.samples[3]": expected a number, found a string").
// Numbers written as null read as NaN: the writers turn non-finite values into null.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reporters/run_result.h"

namespace shardbench {

// A metric as stored: its summary as the writer computed it (null without samples) and, once
// launches are merged, one median per launch.
struct StoredMetric : Metric {
  std::optional<double> median, p10, p90, min, max;
  std::optional<std::vector<double>> repetition_medians;
};

// Per rank (outer), per step with warmup (inner); the two have the same shape.
struct RankSteps {
  std::vector<std::vector<double>> step_seconds, comm_wait_seconds;
};

// The resolved scenario's fields that reports read (absent: nullopt, the reader's default
// applies); the whole config stays free-form in StoredResult::config for diffs.
struct ConfigFields {
  std::optional<std::string> engine;           // engine
  std::optional<int64_t> warmup_steps;         // train.warmup_steps when a number (auto: nullopt)
  std::optional<double> loss_rtol;             // checks.loss_rtol
  std::optional<int64_t> loss_parity_steps;    // checks.loss_parity_steps
};

struct StoredResult {
  std::string source;  // the file it was read from (for messages)
  std::optional<int64_t> schema_version;
  std::string run_id, started_at;
  // Build and host as written (free-form, shown and diffed); the versions reports compare are typed.
  nlohmann::json provenance = nlohmann::json::object();
  std::optional<std::string> torch;                 // provenance.torch
  nlohmann::json peer = nlohmann::json::object();   // provenance.peer: the peer engine's library versions
  nlohmann::json scenario = nlohmann::json::object();  // as written: name, source, overrides, matrix, config
  std::optional<std::string> name;                  // scenario.name
  nlohmann::json config = nlohmann::json::object();  // scenario.config, fully resolved (free-form)
  ConfigFields config_fields;
  std::string status = "ok";  // ok | failed | error
  std::string message;
  std::vector<StoredMetric> metrics;
  std::vector<RankMemory> memory;
  std::vector<Check> checks;
  std::vector<double> loss;
  nlohmann::json memory_model;  // object or null
  std::optional<RankSteps> per_rank_steps;
  std::optional<int64_t> steady_state_step, measured_from_step, repetitions;
  std::optional<int64_t> resumed_from_step;  // a restarted job continued the run from its checkpoint
  std::vector<NotMeasured> not_measured;     // metrics the engine did not measure, and why
  std::vector<std::string> peer_warnings;    // warnings the peer's libraries raised
  std::optional<std::vector<std::vector<double>>> loss_by_repetition;
  std::optional<std::vector<std::optional<RankSteps>>> per_rank_steps_by_repetition;  // null: a launch without
  std::optional<std::vector<int64_t>> measured_from_step_by_repetition;

  const StoredMetric* metric(const std::string& name) const;
  // Why `name` was not measured, when the result says it was not (null otherwise).
  const NotMeasured* not_measured_metric(const std::string& name) const;
};

// A result file: everything the schema (reporters/results.schema.json) requires must be there,
// at this build's schema version.
StoredResult ReadResultFile(const nlohmann::json& document, const std::string& file);
// A result already held in memory (read from a file by LoadResultSet, merged, or built by a
// test): every field present is checked, absent ones take their defaults. `source` names it.
StoredResult ReadResult(const nlohmann::json& result, const std::string& source);

// One instance of a run's index.json (`run` writes colour and why; `merge` writes neither).
struct IndexEntry {
  std::optional<std::string> name, file, status, message, expect, why, colour;  // file: null when it could not run
  std::optional<bool> as_expected;
  std::optional<int64_t> repetitions;
};
std::vector<IndexEntry> ReadIndex(const nlohmann::json& index, const std::string& file);

// The JSON in a file; unreadable or malformed: InputError naming it.
nlohmann::json ReadJsonFile(const std::string& path);

}  // namespace shardbench
