// Google Benchmark JSON read as a run, so that `compare` and `history` gate micro-benchmarks
// (suites of Google Benchmark programs, harness/micro/) and files `shardbench export --format
// gbench` wrote, like any other results.
//
// Entries that `export` wrote carry "shardbench" (instance, metric, unit, better, kind) and read
// back as they were. Any other entry is a benchmark of its own (the instance: its run_name) with
// real_time and cpu_time in seconds (lower is better) and its rate counters (*_per_second, higher
// is better); other user counters have no known direction and are left out. Every repetition is
// a sample; aggregates (mean, median, stddev, cv) are recomputed, not read. An entry with
// error_occurred makes its instance an error with Google Benchmark's message.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "reporters/result_set.h"

namespace shardbench {

// An object with a "benchmarks" array and a "context" object.
bool IsGoogleBenchmark(const nlohmann::json& document);
// InputError naming the file and the field for an entry that is not as Google Benchmark writes it.
ResultSet ImportGoogleBenchmark(const nlohmann::json& document, const std::string& file);

}  // namespace shardbench
