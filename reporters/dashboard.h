// The HTML dashboard: one self-contained file (chart.js inlined from Debian's libjs-chart.js at
// build time, no network) with, first, what did not end as expected (failed checks with their
// detail, expected and actual colour, the suite's why); the comparison and its confidence intervals,
// memory by category per rank with the memory model's prediction beside it, per-rank busy and
// step time distributions (stragglers), loss curves, the trend of every metric over a history
// (on a time axis with each run's commit, linked to its dashboard and JSON, its spread as a band,
// change points and the gate's thresholds drawn, alerts at the top), and the provenance of every
// run. Everything shown is data in one embedded JSON block rendered by the page's script with textContent (never innerHTML), so
// user-controlled text (scenario names, messages) cannot inject markup.
#pragma once

#include <string>

#include "reporters/compare.h"
#include "reporters/engine_pairs.h"
#include "reporters/gate_policy.h"
#include "reporters/history.h"
#include "reporters/result_set.h"

namespace shardbench {

struct DashboardInput {
  std::string title = "shardbench";
  const Comparison* comparison = nullptr;  // with its two result sets
  const ResultSet* base = nullptr;
  const ResultSet* current = nullptr;
  const History* history = nullptr;
  const std::vector<EnginePair>* engine_pairs = nullptr;  // engines side by side (compare --engines)
  // Where the page is written: links to each history run's dashboard and JSON are made relative
  // to it (only to files that exist). "" = the current directory.
  std::string page_dir;
  // The gate policy whose thresholds the history page draws (nullptr: the defaults).
  const GatePolicy* policy = nullptr;
};

// The page's data (what the tests read back).
nlohmann::json DashboardData(const DashboardInput& in);
std::string DashboardHtml(const DashboardInput& in);

// Makes JSON safe inside <script type="application/json">: no "</" (script end), no U+2028/9.
std::string JsonForScript(const nlohmann::json& data);

}  // namespace shardbench
