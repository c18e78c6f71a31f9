#include "harness/suite.h"

#include <cstdlib>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "engine/common/error.h"
#include "engine/common/path_checks.h"
#include "engine/common/yaml_location.h"
#include "harness/output_dir.h"
#include "harness/scenario/scenario_matrix.h"
#include "harness/scenario/scenario_parser.h"

namespace shardbench {
namespace fs = std::filesystem;
namespace {

bool IsSuiteFile(const std::string& path) {
  try {
    YAML::Node root = YAML::LoadFile(path);
    return root.IsMap() && root["runs"];
  } catch (const YAML::Exception&) {
    return false;  // let the scenario parser report the YAML error with its line
  }
}

}  // namespace

std::string ProjectDir() {
  if (const char* home = std::getenv("SHARDBENCH_HOME"); home && *home) return home;
  return SHARDBENCH_SOURCE_DIR;
}

Suite LoadSuiteFile(const std::string& path) {
  YAML::Node root = LoadYamlFile(path, "suite");
  Suite suite;
  suite.source = path;
  suite.name = fs::path(path).stem().string();
  if (!root.IsMap()) throw InputError(path + ": a suite is a mapping with name, description and runs");
  for (const auto& kv : root) {
    const std::string where = YamlLocation(path, kv.first);
    const std::string key = PlainKey(path, kv.first);
    if ((key == "name" || key == "description") && !kv.second.IsScalar()) {
      throw InputError(where + ": suite '" + key + "' must be a string");
    }
    if (key == "name") suite.name = kv.second.Scalar();
    else if (key == "description") suite.description = kv.second.Scalar();
    else if (key != "runs") throw InputError(where + ": unknown suite key '" + key + "' (expected name, description, runs)");
  }
  if (!root["runs"].IsSequence() || root["runs"].size() == 0) {
    throw InputError(YamlLocation(path, root["runs"]) + ": 'runs' must be a non-empty list");
  }
  for (const auto& entry : root["runs"]) {
    if (!entry.IsMap() || !entry["scenario"]) throw InputError(YamlLocation(path, entry) + ": each run needs 'scenario: FILE'");
    SuiteRun run;
    run.where = YamlLocation(path, entry);
    for (const auto& kv : entry) {
      const std::string where = YamlLocation(path, kv.first);
      const std::string key = PlainKey(path, kv.first);
      try {
        if (key == "scenario") {
          run.scenario_file = (fs::path(path).parent_path() / kv.second.as<std::string>()).lexically_normal().string();
        } else if (key == "repetitions") {
          run.repetitions = kv.second.as<int>();
          if (run.repetitions < 1 || run.repetitions > kMaxRepetitions) {
            throw InputError(where + ": 'repetitions' must be from 1 to " + std::to_string(kMaxRepetitions));
          }
        } else if (key == "overrides") {
          run.overrides = kv.second.as<std::vector<std::string>>();
          RefuseRepeatedOverrides(run.overrides, where + ": ");
        } else if (key == "expect") {
          run.expect = kv.second.as<std::string>();
          if (run.expect != "green" && run.expect != "red" && run.expect != "error") {
            throw InputError(where + ": 'expect' must be green, red or error");
          }
        } else if (key == "name") {
          run.name = kv.second.as<std::string>();
          run.where = where + " (name)";
        } else if (key == "why") {
          run.why = kv.second.as<std::string>();
        } else {
          throw InputError(where + ": unknown run key '" + key + "' (expected scenario, name, repetitions, overrides, expect, why)");
        }
      } catch (const YAML::Exception&) {
        throw InputError(where + ": key '" + key + "' has the wrong type");
      }
    }
    if (!IsRegularFile(run.scenario_file)) {
      throw InputError(YamlLocation(path, entry["scenario"]) + ": scenario file " + run.scenario_file + " does not exist");
    }
    suite.runs.push_back(run);
  }
  return suite;
}

std::vector<Job> ResolveTarget(const std::string& target, const std::vector<std::string>& overrides, std::string* title,
                               TargetSource* source) {
  std::string path = target;
  if (!IsRegularFile(path)) {
    for (const char* dir : {"suites", "scenarios"}) {
      const std::string candidate = ProjectDir() + "/" + dir + "/" + target + ".yaml";
      if (IsRegularFile(candidate)) {
        path = candidate;
        break;
      }
    }
  }
  if (!IsRegularFile(path)) {
    throw InputError("'" + target + "' is neither a file nor a shipped suite or scenario (see `shardbench list`)");
  }
  std::vector<Job> jobs;
  std::vector<std::pair<std::string, std::string>> names;  // instance, where it was declared
  const bool suite_file = IsSuiteFile(path);
  if (source) *source = {suite_file ? "suite" : "scenario", path};
  if (suite_file) {
    const Suite suite = LoadSuiteFile(path);
    if (title) *title = suite.name;
    for (const auto& run : suite.runs) {
      std::vector<std::string> all = run.overrides;
      all.insert(all.end(), overrides.begin(), overrides.end());
      if (!run.name.empty()) all.insert(all.begin(), "name=" + run.name);
      for (auto& s : LoadScenarioInstances(run.scenario_file, all)) {
        names.emplace_back(s.name, run.where);
        jobs.push_back({s, run.repetitions, run.expect, run.why});
      }
    }
  } else {
    auto instances = LoadScenarioInstances(path, overrides);
    if (title) *title = instances.front().base_name.empty() ? instances.front().name : instances.front().base_name;
    for (auto& s : instances) {
      names.emplace_back(s.name, path);
      jobs.push_back({s, 1, "green", ""});
    }
  }
  CheckInstanceFileNames(names);  // each instance's files its own, under --out
  return jobs;
}

std::vector<std::vector<std::string>> ListShipped() {
  std::vector<std::vector<std::string>> rows;
  for (const char* dir : {"suites", "scenarios"}) {
    const fs::path d = fs::path(ProjectDir()) / dir;
    if (!IsDirectory(d)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(d)) {
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string what;
      if (std::string(dir) == "suites") {
        try {
          const Suite s = LoadSuiteFile(f.string());
          what = s.description + " (" + std::to_string(s.runs.size()) + " runs)";
        } catch (const Error& e) {
          what = std::string("invalid: ") + e.what();
        }
      } else {
        try {
          what = std::to_string(LoadScenarioInstances(f.string()).size()) + " instance(s)";
        } catch (const Error& e) {
          what = std::string("invalid: ") + e.what();
        }
      }
      rows.push_back({std::string(dir) == "suites" ? "suite" : "scenario", f.stem().string(), what});
    }
  }
  return rows;
}

}  // namespace shardbench
