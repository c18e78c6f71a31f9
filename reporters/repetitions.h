// Repetitions of one instance are separate launches; their results merge into one: every
// measured step's sample kept, one median per repetition (what statistical comparisons use),
// checks failed if any repetition failed them, and the worst status; per-step data (loss,
// per_rank_steps) listed per repetition.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace shardbench {

nlohmann::json MergeRepetitions(const std::vector<nlohmann::json>& repetitions);

}  // namespace shardbench
