// A YAML document as JSON: maps, sequences, and scalars typed as YAML 1.2's core schema reads
// them (true/false, integers, floats, the rest strings; null for a null node). How a result
// carries its resolved scenario (the `scenario.config` block).
#pragma once

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace shardbench {

nlohmann::json YamlToJson(const YAML::Node& node);

}  // namespace shardbench
