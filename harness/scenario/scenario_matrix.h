// A scenario file's `matrix:` (dotted key -> list of values) expands to the cartesian product
// of its axes, minus the points that match an entry of `exclude:`. Each point is a named
// instance: "base[leaf=value,...]", e.g. lora_blowup[use_orig_params=true,wrap_policy=lora_separate].
// Values are applied after the file's own keys and before command-line overrides.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/scenario/scenario.h"

namespace shardbench {

// The most instances one scenario's matrix may span (counted before `exclude`), so that a
// typo cannot ask for millions; each instance is parsed once (linear in their number).
inline constexpr size_t kMaxMatrixInstances = 10000;

// Every instance of the file (one if it has no matrix), fully resolved and validated.
std::vector<Scenario> LoadScenarioInstances(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace shardbench
