// The memory-blowup shrinker: the smallest scenario that still shows a property ("the metric
// stays at least X"), found by greedy reduction, one dimension at a time and smallest value
// first: world size, decoder layers, hidden size (with the MLP width, keeping the heads),
// sequence length, batch. Every candidate is a real run; the search repeats until a whole pass
// changes nothing. Deterministic for deterministic (exact) metrics: the same input gives the
// same reproducer.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/scenario.h"

namespace shardbench {

struct ShrinkAttempt {
  std::vector<std::string> overrides;  // on top of the user's
  std::optional<double> value;         // the metric, or none when the run failed
  bool kept = false;
};

struct ShrinkResult {
  std::vector<std::string> overrides;  // the reductions kept
  double value = 0;                    // the metric of the smallest scenario
  std::vector<ShrinkAttempt> attempts;
};

// `resolve`: the scenario with these reductions applied (the user's overrides included);
// `evaluate`: runs it and returns the metric (none if it failed). The starting scenario must
// hold the property, else InputError.
ShrinkResult Shrink(const std::function<Scenario(const std::vector<std::string>&)>& resolve,
                    const std::function<std::optional<double>(const std::vector<std::string>&)>& evaluate,
                    double at_least, int max_runs = 60);

}  // namespace shardbench
