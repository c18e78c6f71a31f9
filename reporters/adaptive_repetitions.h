// `shardbench run ... --repetitions auto[:MAX] --target-mde X`: instead of a fixed number of
// launches, add launches of an instance until the spread of its gated sampled metrics is pinned
// tightly enough that a comparison against a base like it could catch a change of X (its
// minimum detectable effect, reporters/power.h), or MAX launches are spent. Pinpoint's idea
// (add repetitions until confident), judged by our own power equation.
//
// The MDE is predicted for a comparison with a base of the same spread and as many launches,
// at the level the policy's correction would use for a family of `family_size` gated metrics,
// from a pessimistic spread (its upper 80% confidence bound), so that a lucky run of alike
// launches does not stop the launches early.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reporters/gate_policy.h"
#include "reporters/results_reader.h"

namespace shardbench {

struct AdaptiveRepetitions {
  double target_mde = 0.10;  // relative (0.10 = 10%)
  int max = 20;              // launches at most
  GatePolicy policy;         // which metrics are gated, their tests and minimum samples
  size_t family_size = 1;    // gated sampled metrics the later comparison corrects over
};

// "auto" -> max 20, "auto:12" -> 12; nullopt for a plain count. InputError naming the flag
// for anything else.
std::optional<int> ParseAutoRepetitions(const std::string& text);

struct PinStatus {
  bool pinned = false;                 // every gated sampled metric reaches the target
  std::map<std::string, double> mde;   // per gated sampled metric (+inf: not yet judgeable)
  std::string widest;                  // the metric furthest from the target
  std::string Describe(double target) const;  // "tokens_per_s 8.1% (widest) <= 10%"
};

// From the results of the launches so far (one result.json each, read, in launch order).
PinStatus PinnedSoFar(const std::vector<StoredResult>& launches, const AdaptiveRepetitions& plan);

// The gated sampled metrics of one result under `policy` (the comparison's family, per instance).
size_t GatedSampledMetrics(const StoredResult& result, const GatePolicy& policy);

}  // namespace shardbench
