// "file.yaml:12": where a YAML node sits, for InputError messages that name the file, the real
// line and the field (line numbers are 1-based; a node built in memory has no line).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace shardbench {

inline std::string YamlLocation(const std::string& path, const YAML::Node& n) {
  const auto mark = n.Mark();
  return mark.line < 0 ? path : path + ":" + std::to_string(mark.line + 1);
}

}  // namespace shardbench
