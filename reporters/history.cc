#include "reporters/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "reporters/format.h"
#include "reporters/gate_policy.h"

namespace shardbench {
namespace {

double Ratio(double before, double after) { return before == 0 ? (after == 0 ? 1 : 1e300) : after / before; }

SeriesPoint PointOf(size_t run, const StoredMetric& m) {
  SeriesPoint p{run, *m.median, *m.median, *m.median};
  std::vector<double> launches;  // null (non-finite as written) is no launch median
  for (double v : m.repetition_medians.value_or(std::vector<double>{})) {
    if (std::isfinite(v)) launches.push_back(v);
  }
  if (launches.size() > 1) {
    const auto [low, high] = std::minmax_element(launches.begin(), launches.end());
    p.low = *low, p.high = *high;
  } else if (m.p10 && m.p90 && std::isfinite(*m.p10) && std::isfinite(*m.p90)) {
    p.low = *m.p10, p.high = *m.p90;
  }
  return p;
}

std::string Direction(const MetricSeries& s, const ChangePoint& c) {
  if (c.after == c.before) return "";
  const bool worse = s.better == "lower" ? c.after > c.before : c.after < c.before;
  return worse ? "worse" : "better";
}

}  // namespace

History BuildHistory(const std::vector<ResultSet>& runs, const std::string& instance_glob, const std::string& metric_glob,
                     const ChangePointOptions& options) {
  History h;
  std::map<std::pair<std::string, std::string>, size_t> index;  // (instance, metric) -> series
  for (size_t r = 0; r < runs.size(); ++r) {
    h.runs.push_back(runs[r].source);
    h.started_at.push_back(runs[r].started_at);
    h.provenance.push_back(nlohmann::json::object());
    bool first = true;
    for (const auto& inst : runs[r].instances) {
      if (!inst.ended_as_expected() && GlobMatch(instance_glob, inst.name)) h.problems.push_back({r, inst.name, inst.status, inst.message});
      if (inst.result.is_null()) continue;
      const StoredResult result = ReadInstance(inst);
      if (first) h.provenance.back() = result.provenance;  // one build and host per run
      first = false;
      if (!GlobMatch(instance_glob, inst.name)) continue;
      for (const auto& m : result.metrics) {
        if (!GlobMatch(metric_glob, m.name) || !m.median) continue;
        auto [it, fresh] = index.try_emplace({inst.name, m.name}, h.series.size());
        if (fresh) h.series.push_back({inst.name, m.name, m.unit, m.better, m.kind, {}, {}});
        h.series[it->second].points.push_back(PointOf(r, m));
      }
    }
  }
  for (auto& s : h.series) {
    std::vector<double> values;
    for (const auto& p : s.points) values.push_back(p.value);
    s.change_points = DetectChangePoints(values, options);
  }
  return h;
}

std::string VersionChangeAt(const History& h, size_t run) {
  if (run == 0 || run >= h.provenance.size()) return "";
  const nlohmann::json &a = h.provenance[run - 1], &b = h.provenance[run];
  std::string out;
  auto diff = [&](const std::string& label, const nlohmann::json& x, const nlohmann::json& y) {
    if (x != y) out += (out.empty() ? "" : ", ") + label + " " + (x.is_string() ? x.get<std::string>() : x.dump()) + " -> " +
                       (y.is_string() ? y.get<std::string>() : y.dump());
  };
  diff("torch", a.value("torch", nlohmann::json()), b.value("torch", nlohmann::json()));
  const nlohmann::json pa = a.value("peer", nlohmann::json::object()), pb = b.value("peer", nlohmann::json::object());
  for (const char* k : {"torch", "transformers", "peft"}) {
    if (pa.contains(k) || pb.contains(k)) diff(std::string("peer ") + k, pa.value(k, nlohmann::json()), pb.value(k, nlohmann::json()));
  }
  return out;
}

std::string HistoryConsoleReport(const History& h) {
  std::ostringstream s;
  int found = 0;
  for (const auto& series : h.series) {
    for (const auto& c : series.change_points) {
      ++found;
      const size_t run = series.points[c.index].run;
      char p[32];
      std::snprintf(p, sizeof(p), "%.3f", c.p_value);
      s << series.instance << " " << series.metric << ": shift at run " << run << " (" << h.started_at[run] << ", " << h.runs[run]
        << "): " << FormatValue(c.before, series.unit) << " -> " << FormatValue(c.after, series.unit) << " ("
        << FormatDelta(Ratio(c.before, c.after)) << ", " << Direction(series, c) << "), p=" << p;
      if (const std::string v = VersionChangeAt(h, run); !v.empty()) s << "; versions changed at this run: " << v;
      s << "\n";
    }
  }
  s << found << " change point" << (found == 1 ? "" : "s") << " in " << h.series.size() << " series over " << h.runs.size()
    << " runs (E-divisive means, permutation test)\n";
  return s.str();
}

std::string HistoryMarkdownReport(const History& h) {
  std::ostringstream s;
  s << "### shardbench history: " << h.runs.size() << " runs, " << h.series.size() << " series\n\n";
  s << "| instance | metric | shift at run | started | before | after | delta | direction | p |\n"
       "|---|---|---:|---|---:|---:|---:|---|---:|\n";
  for (const auto& series : h.series) {
    for (const auto& c : series.change_points) {
      const size_t run = series.points[c.index].run;
      char p[32];
      std::snprintf(p, sizeof(p), "%.3f", c.p_value);
      s << "| " << EscapeMarkdown(series.instance) << " | " << EscapeMarkdown(series.metric) << " | " << run << " | "
        << EscapeMarkdown(h.started_at[run]) << " | " << EscapeMarkdown(FormatValue(c.before, series.unit)) << " | "
        << EscapeMarkdown(FormatValue(c.after, series.unit)) << " | " << FormatDelta(Ratio(c.before, c.after)) << " | "
        << Direction(series, c);
      if (const std::string v = VersionChangeAt(h, run); !v.empty()) s << " (versions changed: " << EscapeMarkdown(v) << ")";
      s << " | " << p << " |\n";
    }
  }
  return s.str();
}

}  // namespace shardbench
