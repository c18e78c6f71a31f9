#include "engine/checkpoint/state_dict.h"

#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include "engine/checkpoint/state_dict_kinds.h"
#include "engine/comm/gather_strings.h"
#include "engine/common/error.h"

namespace shardbench::checkpoint {

StateDictKind ParseStateDictKind(const std::string& name) {
  if (name == "full") return StateDictKind::kFull;
  if (name == "sharded") return StateDictKind::kSharded;
  if (name == "local") return StateDictKind::kLocal;
  if (name == "adapter") return StateDictKind::kAdapter;
  throw InputError("state dict kind '" + name + "': expected one of full, sharded, local, adapter");
}

SaveReport SaveStateDict(StateDictKind kind, const StateDictTarget& target, const std::string& dir) {
  c10::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  SaveReport r;
  switch (kind) {
    case StateDictKind::kFull: r = SaveFull(target, dir); break;
    case StateDictKind::kSharded: r = SaveSharded(target, dir); break;
    case StateDictKind::kLocal: r = SaveLocal(target, dir); break;
    case StateDictKind::kAdapter: r = SaveAdapter(target, dir); break;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

LoadReport LoadStateDict(StateDictKind kind, const StateDictTarget& target, const std::string& dir,
                         LoadOptions options) {
  c10::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  LoadReport r;
  switch (kind) {
    case StateDictKind::kFull: r = LoadFull(target, dir, options); break;
    case StateDictKind::kSharded: r = LoadSharded(target, dir, options); break;
    case StateDictKind::kLocal: r = LoadLocal(target, dir, options); break;
    case StateDictKind::kAdapter: r = LoadAdapter(target, dir, options); break;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

void AgreeOnErrors(comm::Communicator* comm, const std::function<void()>& fn) {
  std::string mine;  // "<kind char><message>": I = bad input, X = infrastructure
  try {
    fn();
  } catch (const InputError& e) {
    mine = std::string("I") + e.what();
  } catch (const std::exception& e) {
    mine = std::string("X") + e.what();
  }
  const auto all = comm::AllGatherStrings(comm, mine);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    const std::string where = all.size() > 1 ? "rank " + std::to_string(r) + ": " : "";
    if (all[r][0] == 'I') throw InputError(where + all[r].substr(1));
    throw InfraError(where + all[r].substr(1));
  }
}

std::string StateKey(const std::string& param, const char* what) { return "state." + param + "." + what; }

nlohmann::json OptimizerMeta(const optim::AdamW& optimizer) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : const_cast<optim::AdamW&>(optimizer).groups()) {
    groups.push_back({{"name", g.name}, {"lr", g.lr}, {"weight_decay", g.weight_decay}});
  }
  return {{"impl", optim::AdamWImplName(optimizer.options().impl)},
          {"steps_taken", optimizer.steps_taken()},
          {"groups", groups}};
}

void RestoreOptimizerMeta(optim::AdamW& optimizer, const nlohmann::json& meta, const std::string& dir,
                          LoadOptions options) {
  try {
    const auto& saved = meta.at("groups");
    auto& groups = optimizer.groups();
    if (options.strict) {
      std::string mine, theirs;
      for (const auto& g : groups) mine += (mine.empty() ? "" : ", ") + g.name;
      for (const auto& g : saved) theirs += (theirs.empty() ? "" : ", ") + g.at("name").get<std::string>();
      if (mine != theirs) {
        throw InputError("checkpoint " + dir + ": optimizer groups [" + theirs + "] do not match this optimizer's [" +
                         mine + "]");
      }
    }
    // Read or not, what the manifest says must be possible: an edited field is named, never used.
    const int64_t steps = meta.at("steps_taken").get<int64_t>();
    if (steps < 0 || steps > std::numeric_limits<int32_t>::max()) {
      throw InputError("checkpoint " + dir + ": optimizer steps_taken " + std::to_string(steps) + " is out of range");
    }
    for (const auto& g : saved) {
      const double lr = g.at("lr").get<double>(), decay = g.at("weight_decay").get<double>();
      if (!std::isfinite(lr) || lr < 0 || !std::isfinite(decay) || decay < 0) {
        throw InputError("checkpoint " + dir + ": optimizer group '" + g.at("name").get<std::string>() + "' has lr " +
                         g.at("lr").dump() + ", weight_decay " + g.at("weight_decay").dump() + ": not finite, >= 0");
      }
    }
    const std::string impl = meta.at("impl").get<std::string>();
    try {
      optim::ParseAdamWImpl(impl);
    } catch (const InputError&) {
      throw InputError("checkpoint " + dir + ": optimizer impl '" + impl + "' is not an AdamW implementation");
    }
    optimizer.set_steps_taken(steps);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("checkpoint " + dir + ": optimizer metadata malformed: " + e.what());
  }
}

std::vector<std::string> ExpectedKeys(const std::vector<ParamPiece>& pieces, bool with_state) {
  std::vector<std::string> keys;
  for (const auto& p : pieces) {
    keys.push_back(p.name);
    if (with_state && p.trainable) {
      for (const char* what : {"exp_avg", "exp_avg_sq", "step"}) keys.push_back(StateKey(p.name, what));
    }
  }
  return keys;
}

void ReconcileKeys(const std::vector<std::string>& expected, const std::vector<std::string>& present,
                   const std::string& dir, LoadOptions options, LoadReport& report) {
  const std::set<std::string> want(expected.begin(), expected.end()), have(present.begin(), present.end());
  for (const auto& k : want) {
    if (!have.count(k)) report.missing.push_back(k);
  }
  for (const auto& k : have) {
    if (!want.count(k)) report.unexpected.push_back(k);
  }
  if (!options.strict || (report.missing.empty() && report.unexpected.empty())) return;
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 5; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 5) s += ", ... (" + std::to_string(v.size()) + " in all)";
    return s.empty() ? std::string("none") : s;
  };
  throw InputError("checkpoint " + dir + ": keys do not match the model: missing " + list(report.missing) +
                   "; unexpected " + list(report.unexpected));
}

}  // namespace shardbench::checkpoint
