#include "reporters/result_set.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "engine/common/error.h"
#include "reporters/gbench_import.h"
#include "reporters/results_reader.h"

namespace shardbench {
namespace fs = std::filesystem;
namespace {

nlohmann::json ReadJson(const fs::path& path) { return ReadJsonFile(path.string()); }

bool IsResult(const nlohmann::json& j) { return j.is_object() && j.contains("schema_version") && j.contains("metrics"); }
bool IsIndex(const nlohmann::json& j) { return j.is_object() && j.contains("instances") && j["instances"].is_array(); }

// Checked in full here (results_reader.h), so that every report reads a valid result.
InstanceResult FromResult(nlohmann::json j, const fs::path& path) {
  const StoredResult stored = ReadResultFile(j, path.string());
  InstanceResult r;
  r.name = stored.name.value_or(path.stem().string());
  r.status = stored.status;
  r.message = stored.message;
  r.file = path.string();
  r.result = std::move(j);
  return r;
}

ResultSet FromIndex(const nlohmann::json& index, const fs::path& path) {
  ResultSet set;
  set.source = path.string();
  for (const IndexEntry& entry : ReadIndex(index, path.string())) {
    InstanceResult r;
    if (entry.file) {
      const fs::path file = path.parent_path() / *entry.file;
      r = FromResult(ReadJson(file), file);
    }
    r.name = entry.name.value_or(r.name);
    r.status = entry.status.value_or(r.result.is_null() ? "error" : r.status);
    r.message = entry.message.value_or(r.message);
    r.expect = entry.expect.value_or("");
    r.why = entry.why.value_or("");
    r.as_expected = entry.as_expected.value_or(false);
    set.instances.push_back(std::move(r));
  }
  return set;
}

// compare and history look instances up by name: of two alike, one would be judged and the
// other never seen (two result files of one scenario in a directory without an index).
void RefuseRepeatedInstances(const ResultSet& set) {
  std::map<std::string, const InstanceResult*> seen;
  for (const auto& i : set.instances) {
    const auto [it, fresh] = seen.emplace(i.name, &i);
    if (!fresh) {
      throw InputError(set.source + ": instance '" + i.name + "' appears twice (" +
                       (it->second->file.empty() ? "an index entry" : it->second->file) + " and " +
                       (i.file.empty() ? "an index entry" : i.file) + "); a run holds each instance once");
    }
  }
}

void SetStartedAt(ResultSet& set) {
  for (const auto& i : set.instances) {
    if (i.result.is_null()) continue;
    const std::string t = ReadInstance(i).started_at;
    if (!t.empty() && (set.started_at.empty() || t < set.started_at)) set.started_at = t;
  }
}

}  // namespace

StoredResult ReadInstance(const InstanceResult& i) {
  return ReadResult(i.result, i.file.empty() ? "results of " + i.name : i.file);
}

std::string Colour(const std::string& status) { return status == "ok" ? "green" : status == "failed" ? "red" : "error"; }

const InstanceResult* ResultSet::find(const std::string& name) const {
  for (const auto& i : instances) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

ResultSet LoadResultSet(const std::string& path_text) {
  const fs::path path(path_text);
  ResultSet set;
  if (fs::is_directory(path)) {
    if (fs::exists(path / "index.json")) {
      set = FromIndex(ReadJson(path / "index.json"), path / "index.json");
    } else {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(path)) {
        if (e.path().extension() == ".json") files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        nlohmann::json j = ReadJson(f);
        if (IsResult(j)) {
          set.instances.push_back(FromResult(std::move(j), f));
        } else if (IsGoogleBenchmark(j)) {
          // One file per benchmark program (scripts/micro.sh): two programs may name a benchmark alike.
          for (auto& i : ImportGoogleBenchmark(j, f.string()).instances) {
            i.name = f.stem().string() + "/" + i.name;
            set.instances.push_back(std::move(i));
          }
        }
      }
      if (set.instances.empty())
        throw InputError(path_text + ": no index.json, no result files and no Google Benchmark JSON in this directory");
    }
  } else if (fs::exists(path)) {
    nlohmann::json j = ReadJson(path);
    if (IsIndex(j)) {
      set = FromIndex(j, path);
    } else if (IsResult(j)) {
      set.instances.push_back(FromResult(std::move(j), path));
    } else if (IsGoogleBenchmark(j)) {
      set = ImportGoogleBenchmark(j, path_text);
    } else {
      throw InputError(path_text + ": neither a shardbench result (schema_version, metrics), a suite index (instances) "
                       "nor Google Benchmark JSON (context, benchmarks)");
    }
  } else {
    throw InputError(path_text + ": no such results file or directory");
  }
  set.source = path_text;
  RefuseRepeatedInstances(set);
  SetStartedAt(set);
  return set;
}

std::vector<ResultSet> LoadHistory(const std::string& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir + ": not a directory of runs");
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() || e.path().extension() == ".json") entries.push_back(e.path());
  }
  std::sort(entries.begin(), entries.end());
  std::vector<ResultSet> runs;
  for (const auto& e : entries) runs.push_back(LoadResultSet(e.string()));
  std::stable_sort(runs.begin(), runs.end(), [](const ResultSet& a, const ResultSet& b) { return a.started_at < b.started_at; });
  if (runs.empty()) throw InputError(dir + ": holds no runs (expected one results directory or file per run)");
  return runs;
}

}  // namespace shardbench
