// "file.yaml:12": where a YAML node sits, for InputError messages that name the file, the real
// line and the field (line numbers are 1-based; a node built in memory has no line).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/common/error.h"

namespace shardbench {

inline std::string YamlLocation(const std::string& path, const YAML::Node& n) {
  const auto mark = n.Mark();
  return mark.line < 0 ? path : path + ":" + std::to_string(mark.line + 1);
}

// A mapping key as text. Our files' keys are plain words: a key that is itself a list or a
// mapping (`{1}: x`, `? [a]`) is an InputError at its line.
inline std::string PlainKey(const std::string& path, const YAML::Node& key) {
  if (!key.IsScalar()) throw InputError(YamlLocation(path, key) + ": a key must be a plain word, not a list or mapping");
  return key.Scalar();
}

}  // namespace shardbench
