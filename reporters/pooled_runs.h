// Several runs of the same target pooled into one: for each instance, the launches of every run
// added up, as if one run had made them all. What ci/ab.sh compares after each round of
// interleaved launches (A B A B ...), and how nights on several runners become one sample.
#pragma once

#include <vector>

#include "reporters/result_set.h"

namespace shardbench {

// Instances in the first run's order (then any only later runs have). Per instance: sampled
// metrics get every run's repetition medians (a run's median when it has none) and every step
// sample; exact metrics, memory and provenance come from the first run that has the instance; a
// check failed in any run is failed (its detail names the run); the worst status wins. An
// instance that could not run in one run keeps the others' launches, its message noted.
ResultSet PoolResultSets(const std::vector<ResultSet>& runs);

// Writes a pooled set as a run directory `compare` and `history` read: index.json and one
// result file per instance (instance-<k>.json). Files are written atomically.
void WriteResultSet(const ResultSet& set, const std::string& dir, const std::string& target);

}  // namespace shardbench
