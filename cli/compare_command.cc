#include "cli/compare_command.h"
#include "cli/report_paths.h"

#include <cstdio>
#include <filesystem>
#include <optional>

#include "engine/common/durable_file.h"
#include "engine/common/error.h"
#include "reporters/compare.h"
#include "reporters/compare_reports.h"
#include "reporters/dashboard.h"
#include "reporters/gate_policy.h"
#include "reporters/engine_pairs.h"
#include "reporters/history.h"

namespace shardbench::cli {

namespace {

// `compare --engines`: red (exit 1) when a pair's losses are apart beyond the scenario's tolerance.
int CompareEngines(const CompareArgs& args) {
  const ResultSet base = LoadResultSet(args.base);
  std::optional<ResultSet> current;
  if (!args.current.empty()) current = LoadResultSet(args.current);
  std::vector<const ResultSet*> sets{&base};
  if (current) sets.push_back(&*current);
  const std::vector<EnginePair> pairs = PairEngines(sets);
  if (pairs.empty()) {
    throw InputError(args.base + (current ? " and " + args.current : "") +
                     ": no scenario was run by two engines (instances pair by name without their engine=... coordinate)");
  }
  try {
    if (!args.markdown.empty()) WriteFileAtomically(args.markdown, EnginePairsMarkdown(pairs));
    if (!args.html.empty()) {
      DashboardInput in{"shardbench: engines side by side", nullptr, nullptr, current ? &*current : &base, nullptr, &pairs};
      if (current) in.base = &base;
      in.page_dir = std::filesystem::path(args.html).parent_path().string();
      WriteFileAtomically(args.html, DashboardHtml(in));
    }
  } catch (const std::exception& e) {
    throw InfraError(std::string("writing reports: ") + e.what());
  }
  std::fputs(EnginePairsConsole(pairs).c_str(), stdout);
  for (const auto& p : pairs) {
    if (!p.loss_ok()) return static_cast<int>(ExitCode::kRegression);
  }
  return 0;
}

}  // namespace

int CompareCommand(const CompareArgs& args) {
  CheckReportPath("--markdown", args.markdown, ReportKind::kMarkdown);
  CheckReportPath("--junit", args.junit, ReportKind::kJUnit);
  CheckReportPath("--html", args.html, ReportKind::kHtml);
  if (args.engines) return CompareEngines(args);
  if (args.current.empty()) throw InputError("compare: CURRENT is required (only --engines reads a single result set)");
  // Read everything before writing anything: bad input leaves no half-written reports.
  const ResultSet base = LoadResultSet(args.base);
  const ResultSet current = LoadResultSet(args.current);
  GatePolicy policy = args.policy.empty() ? DefaultGatePolicy() : LoadGatePolicy(args.policy);
  if (args.max_mde) policy.sampled_defaults.max_mde = CheckRelativeChange(*args.max_mde, "--max-mde");
  policy.paired = args.paired;
  std::optional<History> history;
  if (!args.history.empty()) history = BuildHistory(LoadHistory(args.history), "*", "*");
  const Comparison c = Compare(base, current, policy, args.today.empty() ? TodayUtc() : args.today);
  try {
    if (!args.markdown.empty()) WriteFileAtomically(args.markdown, MarkdownReport(c));
    if (!args.junit.empty()) WriteFileAtomically(args.junit, JUnitReport(c));
    if (!args.html.empty()) {
      DashboardInput in{"shardbench compare", &c, &base, &current, history ? &*history : nullptr};
      in.page_dir = std::filesystem::path(args.html).parent_path().string();
      in.policy = &policy;
      WriteFileAtomically(args.html, DashboardHtml(in));
    }
  } catch (const std::exception& e) {
    throw InfraError(std::string("writing reports: ") + e.what());
  }
  std::fputs(args.quiet ? QuietReport(c).c_str() : ConsoleReport(c).c_str(), stdout);
  return static_cast<int>(c.exit_code());
}

int HistoryCommand(const HistoryArgs& args) {
  CheckReportPath("--markdown", args.markdown, ReportKind::kMarkdown);
  CheckReportPath("--html", args.html, ReportKind::kHtml);
  const GatePolicy policy = args.policy.empty() ? DefaultGatePolicy() : LoadGatePolicy(args.policy);
  const History h = BuildHistory(LoadHistory(args.dir), args.instance, args.metric);
  if (h.series.empty()) throw InputError(args.dir + ": no metric matches instance '" + args.instance + "' and metric '" + args.metric + "'");
  try {
    if (!args.markdown.empty()) WriteFileAtomically(args.markdown, HistoryMarkdownReport(h));
    if (!args.html.empty()) {
      DashboardInput in{"shardbench history: " + args.dir, nullptr, nullptr, nullptr, &h};
      in.page_dir = std::filesystem::path(args.html).parent_path().string();
      in.policy = &policy;
      WriteFileAtomically(args.html, DashboardHtml(in));
    }
  } catch (const std::exception& e) {
    throw InfraError(std::string("writing reports: ") + e.what());
  }
  std::fputs(HistoryConsoleReport(h).c_str(), stdout);
  return 0;
}

}  // namespace shardbench::cli
