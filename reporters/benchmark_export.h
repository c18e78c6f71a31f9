// A run's metrics in the formats other benchmark tools already read (`shardbench export`):
//
//  - Google Benchmark JSON (`context` + `benchmarks`), what tools/compare.py, asv importers and
//    JUnit converters consume. One family per instance x metric named "<instance>/<metric>":
//    every sample as an iteration (repetition_index, repetitions), then its median as an
//    aggregate, as `--benchmark_repetitions` writes them, so compare.py's U test has the
//    repetitions. real_time and cpu_time hold seconds for metrics in seconds (shardbench
//    measures wall time only: cpu_time repeats it) and 0 for the others, whose value is a counter
//    named after the metric. Each entry also carries "shardbench" (instance, metric, unit,
//    better, kind; the median also the launches' medians) so that `compare` and `history` read the file back as it was (gbench_import.h).
//  - Bencher Metric Format: {instance: {metric: {value, lower_value, upper_value}}}, the value
//    the median, the bounds the smallest and largest sample.
//  - github-action-benchmark's customSmallerIsBetter / customBiggerIsBetter: one list per
//    direction (the tool takes them as separate files): {name, unit, value, range, extra}.
//
// Only instances that ran and passed are exported to Bencher and github-action-benchmark (their
// numbers would be tracked as if fine); Google Benchmark lists the others as entries with
// error_occurred, as it does for a benchmark that failed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reporters/result_set.h"

namespace shardbench {

// context.shardbench.export_version of a gbench export: 2 writes one iteration per launch in
// microseconds and the step samples in shardbench.samples (1: one iteration per step sample, in
// seconds); the import reads both.
constexpr int kGbenchExportVersion = 2;

enum class ExportFormat { kGoogleBenchmark, kBencher, kGabSmallerIsBetter, kGabBiggerIsBetter };

// "gbench" | "bencher" | "gab-smaller" | "gab-bigger"; nullopt for anything else.
std::optional<ExportFormat> ParseExportFormat(const std::string& name);
const char* ExportFormatNames();  // for messages: the accepted names

struct Export {
  nlohmann::json document;
  std::vector<std::string> left_out;  // instances not exported, each with why
};

Export ExportResults(const ResultSet& run, ExportFormat format);

}  // namespace shardbench
