// The scenario fields that differ between two resolved configs (results' scenario.config): what
// `compare` lists as scenario changes and what `merge` refuses to pool.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardbench {

struct ConfigChange {
  std::string field;  // "train.steps" (under `prefix`, when given)
  nlohmann::json before, after;
  std::string text() const { return field + " " + before.dump() + " -> " + after.dump(); }  // "train.steps 20 -> 10"
};

// Every leaf of `a` whose value in `b` differs (absent in `b`: null), in `a`'s order.
std::vector<ConfigChange> DiffConfig(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix = "");

}  // namespace shardbench
