#include "reporters/benchmark_export.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "reporters/format.h"
#include "reporters/statistics.h"

namespace shardbench {
namespace {

// A metric of an instance that ran and passed, with the figures every format needs.
struct Exported {
  std::string instance;
  StoredMetric metric;
  double value = 0;  // the median (exact metrics: their one sample)
  double low = 0, high = 0;
  std::string family() const { return instance + "/" + metric.name; }
};

struct Collected {
  std::vector<Exported> metrics;
  std::vector<const InstanceResult*> not_passed;
  std::vector<std::string> not_passed_why, metrics_left_out;
  nlohmann::json provenance = nlohmann::json::object();  // the first instance's that ran
};

Collected Collect(const ResultSet& run) {
  Collected c;
  for (const InstanceResult& instance : run.instances) {
    if (instance.result.is_null() || instance.status != "ok") {
      c.not_passed.push_back(&instance);
      c.not_passed_why.push_back(instance.name + ": " + (instance.result.is_null() ? "did not run" : instance.status) +
                           (instance.message.empty() ? "" : " (" + instance.message + ")"));
      continue;
    }
    const StoredResult result = ReadInstance(instance);
    if (c.provenance.empty()) c.provenance = result.provenance;
    for (const StoredMetric& m : result.metrics) {
      if (m.samples.empty()) {
        c.metrics_left_out.push_back(instance.name + "/" + m.name + ": no samples");
        continue;
      }
      const auto [low, high] = std::minmax_element(m.samples.begin(), m.samples.end());
      c.metrics.push_back({instance.name, m, m.median.value_or(Percentile(m.samples, 50)), *low, *high});
    }
  }
  return c;
}

bool InSeconds(const Metric& m) { return m.unit == "s"; }

// Google Benchmark's own aggregates (statistics.cc): the mean, and the sample standard deviation.
double Mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }

double StdDev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = Mean(v);
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / static_cast<double>(v.size() - 1));
}

// compare.py prints times with no decimals in the file's time unit: seconds showed a step of
// 0.05 s as 0. Microseconds keep a CPU step's digits (4 ms -> 4000) and a GPU run's init time.
constexpr const char* kTimeUnit = "us";
constexpr double kTimeUnitPerSecond = 1e6;

nlohmann::json GoogleBenchmarkEntry(const Exported& e, size_t family, size_t launches, double value) {
  const double time = InSeconds(e.metric) ? value * kTimeUnitPerSecond : 0;
  nlohmann::json entry = {{"name", e.family()},
                          {"family_index", family},
                          {"per_family_instance_index", 0},
                          {"run_name", e.family()},
                          {"run_type", "iteration"},
                          {"repetitions", launches},
                          {"threads", 1},
                          {"iterations", 1},
                          {"real_time", time},
                          {"cpu_time", time},
                          {"time_unit", kTimeUnit}};
  if (!InSeconds(e.metric)) entry[e.metric.name] = value;
  entry["shardbench"] = {{"instance", e.instance}, {"metric", e.metric.name}, {"unit", e.metric.unit},
                         {"better", e.metric.better}, {"kind", e.metric.kind}};
  return entry;
}

// What Google Benchmark writes with --benchmark_repetitions: one iteration entry per launch (a
// launch's median: the unit compare's pooling counts, never a step sample), then mean, median,
// stddev and cv over the launches when there were several. The steps' samples ride along in
// the entry that closes the metric, so that `compare` reads an export back as it was.
void AppendGoogleBenchmarkMetric(const Exported& e, size_t family, nlohmann::json& benchmarks) {
  const std::vector<double> launches =
      e.metric.repetition_medians && !e.metric.repetition_medians->empty() ? *e.metric.repetition_medians
                                                                          : std::vector<double>{e.value};
  for (size_t k = 0; k < launches.size(); ++k) {
    nlohmann::json entry = GoogleBenchmarkEntry(e, family, launches.size(), launches[k]);
    entry["repetition_index"] = k;
    benchmarks.push_back(std::move(entry));
  }
  if (launches.size() > 1) {
    const double mean = Mean(launches), sd = StdDev(launches);
    std::vector<std::pair<const char*, double>> aggregates = {{"mean", mean}, {"median", e.value}, {"stddev", sd}};
    if (mean != 0) aggregates.push_back({"cv", sd / mean});  // undefined over launches that were all 0: left out
    for (const auto& [name, value] : aggregates) {
      const bool cv = std::string(name) == "cv";
      nlohmann::json a = GoogleBenchmarkEntry(e, family, launches.size(), value);
      a["name"] = e.family() + "_" + name;
      a["run_type"] = "aggregate";
      a["aggregate_name"] = name;
      a["aggregate_unit"] = cv ? "percentage" : "time";
      if (cv) a["real_time"] = a["cpu_time"] = value;  // a fraction, not a time
      a["iterations"] = launches.size();
      benchmarks.push_back(std::move(a));
    }
    benchmarks.back()["shardbench"]["repetition_medians"] = launches;
  }
  benchmarks.back()["shardbench"]["samples"] = e.metric.samples;
}

nlohmann::json GoogleBenchmark(const ResultSet& run, const Collected& c) {
  const nlohmann::json& p = c.provenance;
  auto field = [&](const char* key, nlohmann::json fallback) { return p.contains(key) ? p[key] : fallback; };
  nlohmann::json context = {
      {"date", run.started_at},
      {"host_name", field("host", "")},
      {"executable", "shardbench"},
      {"num_cpus", field("cpu_count", 0)},
      {"mhz_per_cpu", 0},  // not measured
      {"cpu_scaling_enabled", false},
      {"caches", nlohmann::json::array()},
      {"library_build_type", field("build_type", "")},
      {"json_schema_version", 1},
      // What Google Benchmark's context has no field for.
      {"shardbench", {{"version", field("shardbench", "")}, {"git_sha", field("git_sha", "")},
                      {"torch", field("torch", "")}, {"source", run.source}, {"export_version", kGbenchExportVersion},
                      {"times", "real_time is wall time in microseconds for metrics measured in seconds (cpu_time "
                                "repeats it: not measured); other metrics are counters named after them, real_time 0. "
                                "One iteration per launch (its median); mean, median, stddev and cv over the launches "
                                "when there were several; every step sample in the last entry's shardbench.samples"}}}};
  nlohmann::json benchmarks = nlohmann::json::array();
  size_t family = 0;
  for (const Exported& e : c.metrics) AppendGoogleBenchmarkMetric(e, family++, benchmarks);
  for (const InstanceResult* i : c.not_passed) {
    benchmarks.push_back({{"name", i->name}, {"family_index", family++}, {"per_family_instance_index", 0},
                          {"run_name", i->name}, {"run_type", "iteration"}, {"repetitions", 1},
                          {"repetition_index", 0}, {"threads", 1}, {"iterations", 0}, {"real_time", 0},
                          {"cpu_time", 0}, {"time_unit", kTimeUnit}, {"error_occurred", true},
                          {"error_message", (i->result.is_null() ? "did not run" : i->status) +
                                                (i->message.empty() ? "" : ": " + i->message)}});
  }
  return {{"context", context}, {"benchmarks", benchmarks}};
}

nlohmann::json Bencher(const Collected& c) {
  nlohmann::json out = nlohmann::json::object();
  for (const Exported& e : c.metrics)
    out[e.instance][e.metric.name] = {{"value", e.value}, {"lower_value", e.low}, {"upper_value", e.high}};
  return out;
}

nlohmann::json GithubActionBenchmark(const Collected& c, const std::string& better) {
  nlohmann::json out = nlohmann::json::array();
  for (const Exported& e : c.metrics) {
    if (e.metric.better != better) continue;
    const size_t n = e.metric.samples.size();
    out.push_back({{"name", e.family()},
                   {"unit", e.metric.unit},
                   {"value", e.value},
                   {"range", "± " + ExactNumber((e.high - e.low) / 2)},
                   {"extra", (n == 1 ? std::string("1 sample") : "median of " + std::to_string(n) + " samples, min " +
                                                                     ExactNumber(e.low) + ", max " + ExactNumber(e.high)) +
                                 " (" + e.metric.kind + ")"}});
  }
  return out;
}

}  // namespace

std::optional<ExportFormat> ParseExportFormat(const std::string& name) {
  if (name == "gbench") return ExportFormat::kGoogleBenchmark;
  if (name == "bencher") return ExportFormat::kBencher;
  if (name == "gab-smaller") return ExportFormat::kGabSmallerIsBetter;
  if (name == "gab-bigger") return ExportFormat::kGabBiggerIsBetter;
  return std::nullopt;
}

const char* ExportFormatNames() { return "gbench, bencher, gab-smaller, gab-bigger"; }

Export ExportResults(const ResultSet& run, ExportFormat format) {
  const Collected c = Collect(run);
  Export out;
  switch (format) {
    case ExportFormat::kGoogleBenchmark: out.document = GoogleBenchmark(run, c); break;
    case ExportFormat::kBencher: out.document = Bencher(c); break;
    case ExportFormat::kGabSmallerIsBetter: out.document = GithubActionBenchmark(c, "lower"); break;
    case ExportFormat::kGabBiggerIsBetter: out.document = GithubActionBenchmark(c, "higher"); break;
  }
  // Google Benchmark lists the instances that did not pass, as errors; the others leave them out.
  out.left_out = c.metrics_left_out;
  if (format != ExportFormat::kGoogleBenchmark)
    out.left_out.insert(out.left_out.end(), c.not_passed_why.begin(), c.not_passed_why.end());
  return out;
}

}  // namespace shardbench
