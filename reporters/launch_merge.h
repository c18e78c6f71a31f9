// The one merge of launches. An instance's repetitions are separate launches (`run` merges
// them), and `merge` pools several runs of the same target (each maybe already several launches)
// as if one run had made them all: both are this function over typed results.
#pragma once

#include <string>
#include <vector>

#include "reporters/results_reader.h"

namespace shardbench {

// One result to merge and how a check it alone failed is attributed ("repetition 2", a run's
// directory). The first launch's result is the base and is never attributed.
struct LaunchResult {
  StoredResult result;
  std::string label;
};

// Merged, per metric (matched by name; one only a later launch has is added): every step sample
// (the summary recomputed from them) and one median per launch (a result that is already a merge
// brings its own list). Per check (by name): failed if any launch failed it, its detail from the
// first failure, labelled. The worst status and its message. Per-step data stays per launch
// (loss_by_repetition, per_rank_steps_by_repetition, measured_from_step_by_repetition), with
// per_rank_steps the first's and steady_state_step / measured_from_step the latest any launch
// had: the point from which every launch's metrics were steady. Provenance, scenario, memory,
// not_measured and warnings are the first launch's; resumed_from_step the last one written.
StoredResult MergeLaunches(const std::vector<LaunchResult>& launches);

// ok < failed < error: the worse status of merged launches wins.
int StatusSeverity(const std::string& status);

}  // namespace shardbench
