// The checks that judge a finished run from what its ranks recorded: did it stay finite, did it
// learn what it should (and only that). Their place and the threshold checks (grad_memory):
// harness/check_table.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/engine_setup.h"
#include "harness/rank_record.h"
#include "reporters/run_result.h"

namespace shardbench {

using Fingerprints = std::vector<std::pair<std::string, Fingerprint>>;

// Divergence is a result: the first step whose loss is NaN or infinite, and on which ranks.
Check FiniteCheck(const std::vector<RankRecord>& all, int64_t planned_steps);

// Trainable parameters must have moved and frozen ones must not have, and the loss must have
// dropped on one and the same batch: step 0's loss (`first_loss`, the initial weights) against
// that batch's loss with the trained weights (`first_batch_after`, Trainer::evaluate; NaN when
// training stopped). `trainable` names each parameter and whether it trains, in the
// fingerprints' order.
Check LearningCheck(double first_loss, double first_batch_after, const std::vector<std::pair<std::string, bool>>& trainable,
                    const Fingerprints& before, const Fingerprints& after);

}  // namespace shardbench
