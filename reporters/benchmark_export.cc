#include "reporters/benchmark_export.h"

#include <algorithm>
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

nlohmann::json GoogleBenchmarkEntry(const Exported& e, size_t family, double value) {
  const double time = InSeconds(e.metric) ? value : 0;
  nlohmann::json entry = {{"name", e.family()},
                          {"family_index", family},
                          {"per_family_instance_index", 0},
                          {"run_name", e.family()},
                          {"run_type", "iteration"},
                          {"repetitions", e.metric.samples.size()},
                          {"threads", 1},
                          {"iterations", 1},
                          {"real_time", time},
                          {"cpu_time", time},
                          {"time_unit", "s"}};
  if (!InSeconds(e.metric)) entry[e.metric.name] = value;
  entry["shardbench"] = {{"instance", e.instance}, {"metric", e.metric.name}, {"unit", e.metric.unit},
                         {"better", e.metric.better}, {"kind", e.metric.kind}};
  return entry;
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
                      {"torch", field("torch", "")}, {"source", run.source},
                      {"times", "real_time is wall time in seconds for metrics measured in seconds (cpu_time repeats "
                                "it: not measured); other metrics are counters named after them, real_time 0"}}}};
  nlohmann::json benchmarks = nlohmann::json::array();
  size_t family = 0;
  for (const Exported& e : c.metrics) {
    for (size_t k = 0; k < e.metric.samples.size(); ++k) {
      nlohmann::json entry = GoogleBenchmarkEntry(e, family, e.metric.samples[k]);
      entry["repetition_index"] = k;
      benchmarks.push_back(std::move(entry));
    }
    nlohmann::json median = GoogleBenchmarkEntry(e, family, e.value);
    median["name"] = e.family() + "_median";
    median["run_type"] = "aggregate";
    median["aggregate_name"] = "median";
    median["aggregate_unit"] = "time";  // Google Benchmark's word for "not a coefficient of variation"
    median["iterations"] = e.metric.samples.size();
    // The launches' medians, which compare pools by default (a run of several launches).
    if (e.metric.repetition_medians) median["shardbench"]["repetition_medians"] = *e.metric.repetition_medians;
    benchmarks.push_back(std::move(median));
    ++family;
  }
  for (const InstanceResult* i : c.not_passed) {
    benchmarks.push_back({{"name", i->name}, {"family_index", family++}, {"per_family_instance_index", 0},
                          {"run_name", i->name}, {"run_type", "iteration"}, {"repetitions", 1},
                          {"repetition_index", 0}, {"threads", 1}, {"iterations", 0}, {"real_time", 0},
                          {"cpu_time", 0}, {"time_unit", "s"}, {"error_occurred", true},
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
