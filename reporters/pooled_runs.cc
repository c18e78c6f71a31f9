#include "reporters/pooled_runs.h"

#include <filesystem>

#include "engine/common/durable_file.h"
#include "reporters/repetitions.h"
#include "reporters/run_result.h"

namespace shardbench {
namespace {

std::vector<double> Numbers(const nlohmann::json& array) {
  std::vector<double> out;
  if (!array.is_array()) return out;
  for (const auto& x : array) {
    if (x.is_number()) out.push_back(x.get<double>());
  }
  return out;
}

// `into` (a pooled result) takes `more`'s launches.
void AddLaunches(nlohmann::json& into, const nlohmann::json& more, const std::string& more_source) {
  for (auto& metric : into["metrics"]) {
    if (metric.value("kind", "") != "sampled") continue;
    for (const auto& m : more["metrics"]) {
      if (m.value("name", "") != metric.value("name", "")) continue;
      std::vector<double> medians = Numbers(metric["repetition_medians"]), samples = Numbers(metric["samples"]);
      const std::vector<double> theirs = m.contains("repetition_medians") ? Numbers(m["repetition_medians"])
                                         : m["median"].is_number()         ? std::vector<double>{m["median"].get<double>()}
                                                                           : std::vector<double>{};
      const std::vector<double> their_samples = Numbers(m["samples"]);
      medians.insert(medians.end(), theirs.begin(), theirs.end());
      samples.insert(samples.end(), their_samples.begin(), their_samples.end());
      metric["repetition_medians"] = medians;
      SetMetricSamples(metric, samples);
    }
  }
  auto& checks = into["checks"];
  for (const auto& c : more.value("checks", nlohmann::json::array())) {
    for (auto& mine : checks) {
      if (mine.value("name", "") == c.value("name", "") && mine.value("passed", true) && !c.value("passed", true)) {
        mine = c;
        mine["detail"] = more_source + ": " + c.value("detail", "");
      }
    }
  }
  if (StatusSeverity(more.value("status", "ok")) > StatusSeverity(into.value("status", "ok"))) {
    into["status"] = more["status"];
    into["message"] = more.value("message", "");
  }
  into["repetitions"] = into.value("repetitions", 1) + more.value("repetitions", 1);
}

// A result whose sampled metrics list their launches explicitly (a single launch has only a median).
nlohmann::json WithExplicitLaunches(nlohmann::json r) {
  for (auto& m : r["metrics"]) {
    if (m.value("kind", "") == "sampled" && !m.contains("repetition_medians")) {
      m["repetition_medians"] = m["median"].is_number() ? nlohmann::json::array({m["median"]}) : nlohmann::json::array();
    }
  }
  if (!r.contains("repetitions")) r["repetitions"] = 1;
  return r;
}

}  // namespace

ResultSet PoolResultSets(const std::vector<ResultSet>& runs) {
  ResultSet pooled;
  for (const auto& run : runs) {
    pooled.source += (pooled.source.empty() ? "" : " + ") + run.source;
    for (const auto& inst : run.instances) {
      InstanceResult* mine = nullptr;
      for (auto& p : pooled.instances) {
        if (p.name == inst.name) mine = &p;
      }
      if (!mine) {
        pooled.instances.push_back(inst);
        InstanceResult& added = pooled.instances.back();
        if (!added.result.is_null()) added.result = WithExplicitLaunches(added.result);
        continue;
      }
      if (inst.result.is_null()) {
        mine->message += (mine->message.empty() ? "" : "; ") + run.source + ": could not run: " + inst.message;
        continue;
      }
      if (mine->result.is_null()) {
        mine->result = WithExplicitLaunches(inst.result);
        mine->status = inst.status;
        continue;
      }
      AddLaunches(mine->result, inst.result, run.source);
      mine->status = mine->result.value("status", mine->status);
      mine->as_expected = mine->as_expected && inst.as_expected;
    }
    if (pooled.started_at.empty() || (!run.started_at.empty() && run.started_at < pooled.started_at)) pooled.started_at = run.started_at;
  }
  return pooled;
}

void WriteResultSet(const ResultSet& set, const std::string& dir, const std::string& target) {
  std::filesystem::create_directories(dir);
  nlohmann::json index = {{"schema_version", kResultsSchemaVersion}, {"target", target}, {"started_at", set.started_at},
                          {"pooled_from", set.source}, {"instances", nlohmann::json::array()}};
  for (size_t k = 0; k < set.instances.size(); ++k) {
    const InstanceResult& i = set.instances[k];
    nlohmann::json entry = {{"name", i.name}, {"file", nullptr}, {"expect", i.expect}, {"status", i.status},
                            {"message", i.message}, {"as_expected", i.as_expected}};
    if (!i.result.is_null()) {
      const std::string file = "instance-" + std::to_string(k) + ".json";
      WriteFileAtomically(dir + "/" + file, i.result.dump(2) + "\n");
      entry["file"] = file;
      entry["repetitions"] = i.result.value("repetitions", 1);
    }
    index["instances"].push_back(entry);
  }
  WriteFileAtomically(dir + "/index.json", index.dump(2) + "\n");
}

}  // namespace shardbench
