// A suite: scenario files (each possibly a matrix) with repetitions, overrides and the colour
// each run is expected to end in (green: every check passes; red: a check fails, as catalog
// cases that reproduce a breakage do). `shardbench run NAME` finds suites/NAME.yaml or
// scenarios/NAME.yaml under the project directory.
#pragma once

#include <string>
#include <vector>

#include "harness/scenario/scenario.h"

namespace shardbench {

// Launches of one instance, at most: more is a typo (a nightly takes 5-20).
inline constexpr int kMaxRepetitions = 10000;

struct SuiteRun {
  std::string scenario_file;  // resolved path
  std::string name;           // optional: replaces the scenario's name (instances stay "name[...]")
  int repetitions = 1;        // separate launches
  std::vector<std::string> overrides;
  // green: every check passes; red: a check fails (a reproduced breakage); error: the run is
  // refused (e.g. a combination PyTorch refuses too, reproduced with its message).
  std::string expect = "green";
  std::string why;  // what the case demonstrates (shown in reports)
  std::string where;  // "suite.yaml:12", the entry's line, for errors about its instances
};

struct Suite {
  std::string name;
  std::string description;
  std::string source;
  std::vector<SuiteRun> runs;
};

// One launchable unit: a resolved scenario instance with its repetitions and expectation.
struct Job {
  Scenario scenario;
  int repetitions = 1;
  std::string expect = "green";
  std::string why;
};

// Where shipped suites/ and scenarios/ live: $SHARDBENCH_HOME, else the source tree this
// binary was built from.
std::string ProjectDir();

Suite LoadSuiteFile(const std::string& path);
// What a target named: a suite or a scenario file, and where it was found.
struct TargetSource {
  std::string kind;  // "suite" | "scenario"
  std::string path;
};
// `target` is a path to a suite or scenario file, or the name of a shipped one. Returns the
// jobs in order and sets `title` (suite or scenario name) and `source`.
std::vector<Job> ResolveTarget(const std::string& target, const std::vector<std::string>& overrides, std::string* title,
                               TargetSource* source = nullptr);
// Shipped suites and scenarios: (kind, name, description) rows for `shardbench list`.
std::vector<std::vector<std::string>> ListShipped();

}  // namespace shardbench
