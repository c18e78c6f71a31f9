// The one table of scenario fields: dotted key, type, accessor, help. Parsing, overrides,
// unknown-key suggestions and `show` all read it, so a field is added in one place.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "harness/scenario/scenario.h"

namespace shardbench {

struct ScenarioField {
  std::string key;       // "train.batch_size"
  std::string expected;  // "an integer >= 1": used in error messages
  // Sets the field from a YAML node; throws std::invalid_argument with what was wrong.
  std::function<void(Scenario&, const YAML::Node&)> set;
  std::function<YAML::Node(const Scenario&)> get;
};

const std::vector<ScenarioField>& ScenarioFields();
const ScenarioField* FindScenarioField(const std::string& key);
// The valid key closest to `key` by edit distance (for "did you mean").
std::string NearestScenarioKey(const std::string& key);

}  // namespace shardbench
