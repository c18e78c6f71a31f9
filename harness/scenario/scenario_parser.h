// Scenario files (YAML) -> Scenario, strictly: an unknown key, a wrong type or an impossible
// combination is an InputError naming the file, line, key, what was expected, and the nearest
// valid key. `key=value` overrides use the same dotted keys (train.steps=5, lora.enabled=true).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "harness/scenario/scenario.h"

namespace shardbench {

// Reads a YAML file; a missing file or a syntax error is an InputError naming file and line.
YAML::Node LoadYamlFile(const std::string& path, const std::string& what = "scenario");

Scenario LoadScenarioFile(const std::string& path, const std::vector<std::string>& overrides = {});
// A matrix point: axis key -> its value's node in the file (so errors name its line).
using AxisValues = std::vector<std::pair<std::string, YAML::Node>>;
// The file's keys (the top-level `matrix` and `exclude` are the matrix's: skipped here), then a
// matrix point's values, then `name` (when not empty), then the overrides; then validated.
// Every error names the file and the real line of the key or value at fault.
Scenario ParseScenario(const YAML::Node& root, const std::string& source,
                       const std::vector<std::string>& overrides = {}, const AxisValues& point = {},
                       const std::string& name = "");
// Applies one "key=value"; the value is read as YAML (so lists work: lora.targets=[q_proj,k_proj]).
// The same key given twice in one list of overrides (a command line, a suite entry): the last
// would win without a word (Hydra refuses it too). Across lists the later list wins: the command
// line over a suite entry. `where` prefixes the message ("suite.yaml:4: " or "").
void RefuseRepeatedOverrides(const std::vector<std::string>& overrides, const std::string& where);
void ApplyOverride(Scenario& s, const std::string& key_equals_value);
// The fully resolved scenario as YAML (what `shardbench show` prints): every field, or with
// `only_changed` the name and the fields whose value differs from a default Scenario's.
YAML::Node ScenarioToYaml(const Scenario& s, bool only_changed = false);
// Cross-field checks (world size vs backend, lora, model); InputError naming `source`.
void ValidateScenario(const Scenario& s);

}  // namespace shardbench
