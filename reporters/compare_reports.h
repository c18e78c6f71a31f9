// Renderings of a Comparison, one format each, all pure (a string out; the CLI writes files
// atomically): the console table, Markdown for a pull-request comment, JUnit XML for CI.
#pragma once

#include <cstddef>
#include <string>

#include "reporters/compare.h"

namespace shardbench {

// Every metric that changed or could not be judged, then the failed checks and problems; one
// summary line at the end ("RED: 2 regressions, 1 failed check").
std::string ConsoleReport(const Comparison& c);
// A PR comment: the verdict line, failed checks and run problems, a table of what changed
// (metric, base, current, delta, confidence, verdict), then notes and unchanged metrics folded
// in <details>. At most kMarkdownLimit characters (GitHub refuses comments over 65,536): what
// does not fit is counted at the end.
inline constexpr size_t kMarkdownLimit = 60000;
std::string MarkdownReport(const Comparison& c);
// One <testsuite>: each check and each gated metric a <testcase>, failures with the reason;
// infrastructure problems (missing instances) as <error> cases.
std::string JUnitReport(const Comparison& c);
// The verdict line both of the above lead with: RED / UNJUDGED / UNDERPOWERED / GREEN.
std::string SummaryLine(const Comparison& c);
// --quiet: the summary line, then each run problem (a missing instance or gated metric): the
// reason it is red stays on screen even when the report is not.
std::string QuietReport(const Comparison& c);
// What the unchanged gated sampled metrics could have caught (their minimum detectable
// effects: the median one and the widest), or "" when there are none.
std::string PowerLine(const Comparison& c);

}  // namespace shardbench
