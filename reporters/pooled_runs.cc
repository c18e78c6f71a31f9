#include "reporters/pooled_runs.h"

#include <algorithm>
#include <filesystem>

#include "engine/common/durable_file.h"
#include "engine/common/error.h"
#include "reporters/config_diff.h"
#include "reporters/launch_merge.h"
#include "reporters/results_writer.h"
#include "reporters/run_result.h"

namespace shardbench {

namespace {

// Pooled launches are independent repetitions of one configuration: the same launch twice would
// be counted as two (five copies of one run made a U test "significant"), and two scenarios
// pooled would be judged as one.
void RefuseUnpoolable(const std::string& instance, const std::vector<LaunchResult>& launches) {
  for (size_t i = 0; i < launches.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const StoredResult &a = launches[j].result, &b = launches[i].result;
      if (!a.run_id.empty() && a.run_id == b.run_id) {
        throw InputError("merge: " + launches[j].label + " and " + launches[i].label + " hold the same launch of '" +
                         instance + "' (run_id " + a.run_id + "): pooled twice it would count as two");
      }
    }
    const nlohmann::json &first = launches[0].result.config, &other = launches[i].result.config;
    auto changes = DiffConfig(first, other, "scenario.config");
    if (changes.empty()) changes = DiffConfig(other, first, "scenario.config");  // a field only the other has
    if (!changes.empty()) {
      throw InputError("merge: '" + instance + "' ran another scenario in " + launches[i].label + " than in " +
                       launches[0].label + " (" + changes[0].field + " differs): only repetitions of one scenario pool");
    }
  }
}

}  // namespace

ResultSet PoolResultSets(const std::vector<ResultSet>& runs) {
  ResultSet pooled;
  std::vector<std::vector<LaunchResult>> launches;  // per pooled instance, every run's result
  for (const auto& run : runs) {
    pooled.source += (pooled.source.empty() ? "" : " + ") + run.source;
    for (const auto& inst : run.instances) {
      auto mine = std::find_if(pooled.instances.begin(), pooled.instances.end(), [&](const InstanceResult& p) { return p.name == inst.name; });
      if (mine == pooled.instances.end()) {
        pooled.instances.push_back(inst);
        launches.emplace_back();
        mine = pooled.instances.end() - 1;
      } else if (inst.result.is_null()) {
        mine->message += (mine->message.empty() ? "" : "; ") + run.source + ": could not run: " + inst.message;
      } else {
        mine->as_expected = mine->as_expected && (launches[mine - pooled.instances.begin()].empty() || inst.as_expected);
      }
      if (!inst.result.is_null()) launches[mine - pooled.instances.begin()].push_back({ReadInstance(inst), run.source});
    }
    if (pooled.started_at.empty() || (!run.started_at.empty() && run.started_at < pooled.started_at)) pooled.started_at = run.started_at;
  }
  for (size_t k = 0; k < pooled.instances.size(); ++k) {
    if (launches[k].empty()) continue;
    RefuseUnpoolable(pooled.instances[k].name, launches[k]);
    const StoredResult merged = MergeLaunches(launches[k]);
    pooled.instances[k].result = ToJson(merged);
    pooled.instances[k].status = merged.status;
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
