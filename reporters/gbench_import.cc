#include "reporters/gbench_import.h"

#include "engine/common/error.h"
#include "reporters/json_field.h"
#include "reporters/run_result.h"

namespace shardbench {
namespace {

double SecondsPer(const JsonField& unit) {
  const std::string u = unit.OneOf({"ns", "us", "ms", "s"});
  return u == "ns" ? 1e-9 : u == "us" ? 1e-6 : u == "ms" ? 1e-3 : 1.0;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Instances in the order the file first names them, each with its metrics in that order.
struct Imported {
  struct Instance {
    std::string name, error;
    std::vector<StoredMetric> metrics;
    StoredMetric& metric(const std::string& metric, const std::string& unit, const std::string& better, const std::string& kind) {
      for (StoredMetric& m : metrics) {
        if (m.name == metric) return m;
      }
      StoredMetric m;
      m.name = metric, m.unit = unit, m.better = better, m.kind = kind;
      metrics.push_back(m);
      return metrics.back();
    }
  };
  std::vector<Instance> instances;
  Instance& instance(const std::string& name) {
    for (Instance& i : instances) {
      if (i.name == name) return i;
    }
    instances.push_back({name, "", {}});
    return instances.back();
  }
};

// An entry `shardbench export` wrote: its metric as it was. Version 2 carries the step samples
// (and the launches' medians, when several) in the metric's last entry; version 1 wrote one
// iteration per sample, the median aggregate carrying the launches' medians.
void ReadOwnEntry(const JsonField& entry, const JsonField& tag, bool aggregate, int version, Imported& out) {
  const std::string metric = tag.Required("metric").String(), unit = tag.Required("unit").String();
  StoredMetric& m = out.instance(tag.Required("instance").String())
                  .metric(metric, unit, tag.Required("better").OneOf({"lower", "higher"}),
                          tag.Required("kind").OneOf({"exact", "sampled"}));
  if (const auto medians = tag.OptionalNonNull("repetition_medians")) m.repetition_medians = medians->NumbersOrNaN();
  if (version >= 2) {
    if (const auto samples = tag.OptionalNonNull("samples")) m.samples = samples->NumbersOrNaN();
    return;
  }
  if (aggregate) return;
  m.samples.push_back(unit == "s" ? entry.Required("real_time").NumberOrNaN() * SecondsPer(entry.Required("time_unit"))
                                  : entry.Required(metric).NumberOrNaN());
}

// A benchmark of a Google Benchmark program: its times and its rate counters. Each repetition
// is a measurement of its own (many iterations), so it is also what compare's
// `samples: repetitions` pools.
void ReadForeignEntry(const JsonField& entry, Imported& out) {
  const auto run_name = entry.OptionalNonNull("run_name");
  Imported::Instance& instance = out.instance((run_name ? *run_name : entry.Required("name")).String());
  const double seconds = SecondsPer(entry.Required("time_unit"));
  auto add = [&](const std::string& name, const std::string& unit, const std::string& better, double value) {
    StoredMetric& m = instance.metric(name, unit, better, "sampled");
    m.samples.push_back(value);
    if (!m.repetition_medians) m.repetition_medians.emplace();
    m.repetition_medians->push_back(value);
  };
  for (const char* time : {"real_time", "cpu_time"}) add(time, "s", "lower", entry.Required(time).NumberOrNaN() * seconds);
  for (const auto& [key, value] : entry.Members()) {
    if (EndsWith(key, "_per_second")) add(key, "/s", "higher", value.NumberOrNaN());
  }
}

}  // namespace

bool IsGoogleBenchmark(const nlohmann::json& j) {
  return j.is_object() && j.contains("benchmarks") && j["benchmarks"].is_array() && j.contains("context") &&
         j["context"].is_object();
}

ResultSet ImportGoogleBenchmark(const nlohmann::json& document, const std::string& file) {
  const JsonField root(document, file);
  const JsonField context = root.Required("context");
  const auto own_context = context.OptionalNonNull("shardbench");
  const auto export_version = own_context ? own_context->OptionalNonNull("export_version") : std::nullopt;
  const int version = export_version ? static_cast<int>(export_version->NonNegativeInteger()) : 1;
  Imported imported;
  for (const JsonField& entry : root.Required("benchmarks").Elements()) {
    const auto run_type = entry.OptionalNonNull("run_type");
    const bool aggregate = run_type && run_type->OneOf({"iteration", "aggregate"}) == "aggregate";
    const auto tag = entry.OptionalNonNull("shardbench");
    if (aggregate && !tag) continue;  // mean, median, stddev, cv: recomputed from the samples
    const auto error = entry.OptionalNonNull("error_occurred");
    if (error && error->Bool()) {
      const auto message = entry.OptionalNonNull("error_message");
      imported.instance(entry.Required("name").String()).error = message ? message->String() : "error_occurred";
    } else if (tag) {
      ReadOwnEntry(entry, *tag, aggregate, version, imported);
    } else {
      ReadForeignEntry(entry, imported);
    }
  }

  // Where it came from, as provenance (our exports name the build in context.shardbench).
  nlohmann::json provenance = {{"imported_from", "Google Benchmark JSON"}, {"context", context.Object()}};
  if (const auto own = context.OptionalNonNull("shardbench")) {
    for (const char* key : {"shardbench", "git_sha", "torch"}) {
      const char* from = std::string(key) == "shardbench" ? "version" : key;
      if (const auto v = own->OptionalNonNull(from)) provenance[key] = v->String();
    }
  }
  const auto date = context.OptionalNonNull("date");
  const std::string started_at = date ? date->String() : "";

  ResultSet set;
  for (Imported::Instance& i : imported.instances) {
    InstanceResult r;
    r.name = i.name;
    r.file = file;
    if (!i.error.empty()) {
      r.status = "error";
      r.message = i.error;
      set.instances.push_back(std::move(r));
      continue;
    }
    nlohmann::json metrics = nlohmann::json::array();
    for (StoredMetric& m : i.metrics) {
      if (m.kind == "exact") m.per_rank = m.samples;  // exported as the largest rank's value
      nlohmann::json metric = ToJson(static_cast<const Metric&>(m));
      if (m.repetition_medians) metric["repetition_medians"] = *m.repetition_medians;
      metrics.push_back(std::move(metric));
    }
    r.result = {{"schema_version", kResultsSchemaVersion}, {"run_id", file}, {"started_at", started_at},
                {"provenance", provenance}, {"scenario", {{"name", i.name}, {"config", nlohmann::json::object()}}},
                {"status", "ok"}, {"message", ""}, {"metrics", metrics}, {"memory", nlohmann::json::array()},
                {"checks", nlohmann::json::array()}, {"loss", nlohmann::json::array()}};
    r.status = "ok";
    ReadResult(r.result, file);  // the same checks as every result (a NaN sample, a bad unit)
    set.instances.push_back(std::move(r));
  }
  if (set.instances.empty()) throw InputError(file + ": Google Benchmark JSON with no benchmarks");
  set.source = file;
  set.started_at = started_at;
  return set;
}

}  // namespace shardbench
