#include "engine/common/failpoints.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "engine/common/error.h"

namespace shardbench {
namespace {

std::mutex& Mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& ScenarioSet() {
  static std::vector<std::string> names;
  return names;
}

std::vector<std::string> FromEnvironment() {
  std::vector<std::string> names;
  const char* env = std::getenv("SHARDBENCH_FAILPOINTS");
  if (!env) return names;
  std::stringstream in(env);
  for (std::string name; std::getline(in, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  ValidateFailpoints(names, "SHARDBENCH_FAILPOINTS");
  return names;
}

}  // namespace

const std::vector<std::string>& KnownFailpoints() {
  static const std::vector<std::string> known = {"local_load_shift", "adapter_rank0_only", "optim_load_drop_step",
                                                 "slow_step_5pct", "slow_step_10pct", "slow_step_20pct",
                                                 "straggler_rank1", "rank1_fails", "rank1_lost_once", "slow_all_gather",
                                                 "slow_optimizer_5pct", "slow_optimizer_10pct", "slow_optimizer_20pct",
                                                 "slow_collectives_5pct", "slow_collectives_10pct",
                                                 "slow_collectives_20pct"};
  return known;
}

void ValidateFailpoints(const std::vector<std::string>& names, const std::string& where) {
  for (const auto& n : names) {
    const auto& k = KnownFailpoints();
    if (std::find(k.begin(), k.end(), n) == k.end()) {
      std::string list;
      for (const auto& x : k) list += (list.empty() ? "" : ", ") + x;
      throw InputError(where + ": unknown failpoint '" + n + "' (known: " + list + ")");
    }
  }
}

void SetScenarioFailpoints(const std::vector<std::string>& names) {
  ValidateFailpoints(names, "failpoints");
  std::lock_guard<std::mutex> lock(Mutex());
  ScenarioSet() = names;
}

bool FailpointActive(const std::string& name) {
  static const std::vector<std::string> from_env = FromEnvironment();
  std::lock_guard<std::mutex> lock(Mutex());
  const auto& s = ScenarioSet();
  return std::find(from_env.begin(), from_env.end(), name) != from_env.end() ||
         std::find(s.begin(), s.end(), name) != s.end();
}

}  // namespace shardbench
