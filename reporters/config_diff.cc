#include "reporters/config_diff.h"

namespace shardbench {
namespace {

void Collect(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix,
             std::vector<ConfigChange>& out) {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      Collect(it.value(), b.contains(it.key()) ? b[it.key()] : nlohmann::json(),
              prefix + (prefix.empty() ? "" : ".") + it.key(), out);
    }
    return;
  }
  if (a != b) out.push_back({prefix, a, b});
}

}  // namespace

std::vector<ConfigChange> DiffConfig(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix) {
  std::vector<ConfigChange> out;
  Collect(a, b, prefix, out);
  return out;
}

}  // namespace shardbench
