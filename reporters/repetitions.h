// Repetitions of one instance are separate launches; their results merge into one: every
// measured step's sample kept, one median per repetition (what statistical comparisons use),
// checks failed if any repetition failed them, and the worst status; per-step data (loss,
// per_rank_steps) listed per repetition.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace shardbench {

nlohmann::json MergeRepetitions(const std::vector<nlohmann::json>& repetitions);

// A metric's step samples and their summary (median, p10, p90, min, max), set together.
void SetMetricSamples(nlohmann::json& metric, const std::vector<double>& samples);
// ok < failed < error: the worse status of merged launches wins.
int StatusSeverity(const std::string& status);

}  // namespace shardbench
