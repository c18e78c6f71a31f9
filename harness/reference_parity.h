// The loss_parity check: the scenario's model trained by the unsharded reference in one
// process on the whole global batch (same seed, same optimizer groups as the engine under test
// exposes), compared step by step with the engine's global loss.
#pragma once

#include <vector>

#include "reporters/run_result.h"
#include "harness/scenario/scenario.h"

namespace shardbench {

bool LossParityApplies(const Scenario& s);
// Trains the reference on this process (rank 0 calls it) and compares.
Check LossParityCheck(const Scenario& s, const std::vector<double>& engine_loss);

}  // namespace shardbench
