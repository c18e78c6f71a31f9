// What every metric builder of harness/metric_table.cc and harness/step_metrics.cc works
// from (the gathered records, the run's facts and the windows the step metrics sample) and the
// small vocabulary they share. Internal to those files.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "harness/metric_table.h"

namespace shardbench {

// The gathered records and the run's facts, with the windows the step metrics sample.
struct MetricInputs {
  const std::vector<RankRecord>& ranks;
  const RunFacts& facts;
  int64_t steps;   // warmup included
  int64_t warmup;  // the kernel trace's window starts here
  int64_t from;    // the step-time metrics' window starts here
  double world;
};

namespace metric_support {

inline double Max(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
// An empty metric declared by `row` (named `name` when the row is a pattern).
inline Metric DeclaredBy(const MetricRow& row, std::string name = "") {
  return Metric{name.empty() ? row.name : std::move(name), row.unit, row.better, row.kind, {}, {}};
}
// The span metrics' first step: the step metrics' window, but spans are recorded from the
// nominal warmup on, which warmup auto may start before.
inline int64_t SpansFrom(const MetricInputs& in) { return std::max(in.from, in.warmup); }
// A metric an earlier row already built (the table's order), or null.
inline const Metric* Built(const std::vector<Metric>& out, const std::string& name) {
  for (const Metric& m : out) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

}  // namespace metric_support
}  // namespace shardbench
