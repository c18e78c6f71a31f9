// Every check a run can make, declared once, for our engines and the peers alike: its name, the
// scenario field that asks for it, what it judges, and its place in the result (the table's
// order). A threshold check is judged here from its metric (harness/metric_table.h) against the
// limit its field sets, so the figure and the verdict cannot disagree. The other checks are
// made by their own code (run_checks.h, reference_parity.h, frozen_dtype_check.h,
// checkpoint_harness.h, or the peer's Python) and only take their place here.
// Adding a check: a row here, the scenario field (harness/scenario/scenario.h and its parser),
// and, unless it is a threshold check, the code that makes it on each engine.
#pragma once

#include <string>
#include <vector>

#include "harness/metric_table.h"
#include "harness/scenario/scenario.h"
#include "reporters/run_result.h"

namespace shardbench {

// A threshold check's words from its metric's value (the largest rank's) and its limit.
using ThresholdWords = std::string (*)(double value, double limit, const RunFacts& facts, int world_size);

struct CheckRow {
  const char* name;
  const char* asked_by;  // the scenario field that asks for it ("": every run)
  const char* judges;    // what it judges
  // Threshold checks: the metric judged, the field holding its limit (0: not asked) and the
  // words; null for the checks their own code makes.
  const char* metric = nullptr;
  double ChecksConfig::*limit = nullptr;
  ThresholdWords words = nullptr;
};

// The table, in report order.
const std::vector<CheckRow>& CheckTable();

// The threshold checks `s` asks for, judged from the run's metrics: failed ("not judged: ...")
// when a metric was not measured, never green on a figure nobody measured.
std::vector<Check> JudgeThresholdChecks(const Scenario& s, const std::vector<Metric>& metrics,
                                        const std::vector<NotMeasured>& not_measured, const RunFacts& facts);

// `checks` in the table's order. A name the table does not declare (ours or a peer's) is our
// bug: std::logic_error, reported as an internal error.
std::vector<Check> InTableOrder(std::vector<Check> checks);

}  // namespace shardbench
