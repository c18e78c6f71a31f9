// `shardbench history DIR`: every (instance, metric) series over a directory of nightly runs,
// oldest first, and the change points E-divisive finds in it (reporters/change_points.h).
#pragma once

#include <string>
#include <vector>

#include "reporters/change_points.h"
#include "reporters/result_set.h"

namespace shardbench {

struct SeriesPoint {
  size_t run = 0;          // index into the runs
  double value = 0;        // the metric's median in that run
  // The run's spread: the smallest and largest launch median when it had several launches,
  // else its p10 and p90 over the measured steps (equal to value for an exact metric).
  double low = 0, high = 0;
};

struct MetricSeries {
  std::string instance, metric, unit, better, kind;
  std::vector<SeriesPoint> points;
  std::vector<ChangePoint> change_points;  // ChangePoint::index indexes `points`
};

// An instance of a run that did not end as its suite expected (or failed, outside a suite).
struct RunProblem {
  size_t run = 0;
  std::string instance, status, message;
};

struct History {
  std::vector<std::string> runs;        // each run's source (directory), oldest first
  std::vector<std::string> started_at;  // each run's start time
  std::vector<nlohmann::json> provenance;  // each run's (its first instance's: one build, one host)
  std::vector<MetricSeries> series;     // only those matching the filters, with enough points
  std::vector<RunProblem> problems;     // every run's, in run order
};

// Series with fewer than 2 * min_segment points are kept without change points.
History BuildHistory(const std::vector<ResultSet>& runs, const std::string& instance_glob, const std::string& metric_glob,
                     const ChangePointOptions& options = {});

// The library versions that changed between run - 1 and run (our torch; the peer's torch,
// transformers, peft), "" when none: a shift at that run reads as one between versions.
std::string VersionChangeAt(const History& h, size_t run);

// One line per change point ("instance metric: shift at run R (started_at): before -> after,
// delta, p"), then how many series were searched.
std::string HistoryConsoleReport(const History& h);
std::string HistoryMarkdownReport(const History& h);

}  // namespace shardbench
