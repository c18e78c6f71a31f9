#include "reporters/dashboard.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "reporters/compare_reports.h"
#include "reporters/dashboard_assets.h"
#include "reporters/format.h"
#include "reporters/memory_timeline.h"
#include "reporters/peer_warnings.h"
#include "reporters/statistics.h"

namespace shardbench {
namespace {

nlohmann::json MetricJson(const MetricComparison& m) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  return {{"instance", m.instance}, {"metric", m.metric}, {"unit", m.unit}, {"kind", m.kind}, {"better", m.better},
          {"base", m.base}, {"current", m.current}, {"ratio", finite(m.ratio)}, {"ci_low", opt(m.ci_low)},
          {"ci_high", opt(m.ci_high)}, {"p_value", opt(m.p_value)}, {"p_adjusted", opt(m.p_adjusted)},
          {"mde", m.mde && std::isfinite(*m.mde) ? nlohmann::json(*m.mde) : nlohmann::json()},
          {"mde_infinite", m.mde && !std::isfinite(*m.mde)}, {"verdict", VerdictName(m.verdict)},
          {"detail", m.detail}, {"red", m.red()}, {"gated", m.gated}, {"suppressed", m.suppressed},
          {"samples", {m.base_samples, m.current_samples}}};
}

nlohmann::json ComparisonJson(const Comparison& c) {
  nlohmann::json metrics = nlohmann::json::array(), checks = nlohmann::json::array();
  for (const auto& m : c.metrics) metrics.push_back(MetricJson(m));
  for (const auto& k : c.checks) {
    checks.push_back({{"instance", k.instance}, {"name", k.name}, {"passed", k.passed}, {"detail", k.detail},
                      {"expected_red", k.expected_red}});
  }
  // The page lists scenario changes among the notes, first.
  std::vector<std::string> notes;
  for (const auto& [instance, diffs] : c.scenario_changes) notes.push_back("scenario changed: " + instance + ": " + Joined(diffs));
  notes.insert(notes.end(), c.notes.begin(), c.notes.end());
  return {{"base", c.base_source}, {"current", c.current_source}, {"policy", c.policy_source}, {"summary", SummaryLine(c)},
          {"red", c.red()}, {"colour", c.colour()}, {"metrics", metrics}, {"checks", checks}, {"failures", c.failures}, {"notes", notes}};
}

// Per rank, the distribution of busy time (step time minus time blocked in collectives) and
// of step time over the measured steps of every repetition: the straggler shows as the rank
// whose busy time sits above the others' (step times agree: ranks wait for each other).
nlohmann::json RankStepsJson(const StoredResult& result) {
  std::vector<std::optional<RankSteps>> reps;
  std::vector<int64_t> from;
  if (result.per_rank_steps_by_repetition) {
    reps = *result.per_rank_steps_by_repetition;
    from = result.measured_from_step_by_repetition.value_or(std::vector<int64_t>{});
  } else if (result.per_rank_steps) {
    reps = {result.per_rank_steps};
    from = {result.measured_from_step.value_or(0)};
  }
  std::vector<std::vector<double>> busy, step;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (!reps[i]) continue;  // a launch that did not train
    const auto& seconds = reps[i]->step_seconds;
    const auto& wait = reps[i]->comm_wait_seconds;  // the same shape (results_reader.h)
    const size_t first = i < from.size() ? static_cast<size_t>(from[i]) : 0;
    for (size_t r = 0; r < seconds.size(); ++r) {
      if (busy.size() <= r) busy.resize(r + 1), step.resize(r + 1);
      for (size_t s = first; s < seconds[r].size(); ++s) {
        step[r].push_back(seconds[r][s]);
        if (!std::isnan(wait[r][s])) busy[r].push_back(seconds[r][s] - wait[r][s]);  // NaN: waits not measured
      }
    }
  }
  auto summary = [](const std::vector<double>& v) {
    const Summary s = Summarize(v);
    return nlohmann::json{{"min", s.min}, {"p10", s.p10}, {"median", s.median}, {"p90", s.p90}, {"max", s.max}, {"n", s.n}};
  };
  nlohmann::json out = nlohmann::json::array();
  for (size_t r = 0; r < busy.size(); ++r) {
    if (busy[r].empty() || step[r].empty()) continue;
    out.push_back({{"rank", r}, {"busy", summary(busy[r])}, {"step", summary(step[r])}});
  }
  return out;
}

// Per instance of the current results: memory by category per rank, the model's prediction,
// and the loss curves of both sides.
// A file (a history run's, a trace), relative to the page when it exists; null otherwise.
nlohmann::json LinkTo(const std::filesystem::path& file, const std::string& page_dir) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return nullptr;
  const auto base = std::filesystem::absolute(page_dir.empty() ? "." : page_dir, ec);
  const auto relative = std::filesystem::relative(std::filesystem::absolute(file, ec), base, ec);
  return ec || relative.empty() ? nlohmann::json(file.string()) : nlohmann::json(relative.generic_string());
}

// An instance's traces (`run --trace`): <run>/<instance>/rep<N>/trace.json beside its merged
// result <run>/<instance>.json, linked relative to the page; the first one's memory timeline.
void AddTraces(nlohmann::json& entry, const InstanceResult& inst, const std::string& page_dir) {
  entry["traces"] = nlohmann::json::array();
  entry["memory_timeline"] = nullptr;
  if (inst.file.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(inst.file).parent_path() / std::filesystem::path(inst.file).stem();
  for (int rep = 0;; ++rep) {
    const std::filesystem::path rep_dir = dir / ("rep" + std::to_string(rep));
    std::error_code ec;
    if (!std::filesystem::is_directory(rep_dir, ec)) break;
    const std::filesystem::path trace = rep_dir / "trace.json";
    // A peer's ranks each write torch.profiler's trace (peers/torch_fsdp/peer.py): one link a rank.
    for (int r = 0;; ++r) {
      const std::filesystem::path rank_trace = rep_dir / ("trace.rank" + std::to_string(r) + ".json");
      if (!std::filesystem::is_regular_file(rank_trace, ec)) break;
      entry["traces"].push_back({{"repetition", rep}, {"rank", r}, {"href", LinkTo(rank_trace, page_dir)}});
    }
    if (!std::filesystem::is_regular_file(trace, ec)) continue;
    entry["traces"].push_back({{"repetition", rep}, {"href", LinkTo(trace, page_dir)}});
    if (entry["memory_timeline"].is_null()) entry["memory_timeline"] = MemoryTimelineJson(trace.string());
  }
}

nlohmann::json InstancesJson(const ResultSet* base, const ResultSet& current, const std::string& page_dir) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& inst : current.instances) {
    if (inst.result.is_null()) continue;
    const StoredResult result = ReadInstance(inst);
    nlohmann::json memory = nlohmann::json::array();
    for (const auto& m : result.memory) memory.push_back(ToJson(m));
    nlohmann::json entry = {{"name", inst.name}, {"status", inst.status}, {"memory", memory},
                            {"memory_model", result.memory_model}, {"loss_current", result.loss}, {"loss_base", nlohmann::json()}};
    if (base) {
      if (const InstanceResult* b = base->find(inst.name); b && !b->result.is_null()) entry["loss_base"] = ReadInstance(*b).loss;
    }
    entry["rank_steps"] = RankStepsJson(result);
    entry["peer_warnings"] = FoldPeerWarnings(result.peer_warnings);
    entry["not_measured"] = nlohmann::json::array();
    for (const auto& n : result.not_measured) entry["not_measured"].push_back({{"name", n.name}, {"why", n.why}});
    AddTraces(entry, inst, page_dir);
    // The headline metrics, for a page that shows one run on its own.
    static const std::vector<std::string> kHeadline = {"tokens_per_s", "step_time", "mfu", "init_time", "peak_allocated",
                                                       "device_reserved_peak", "host_rss_peak", "grad_bytes",
                                                       "kernel_overlap_ratio", "params_trainable", "straggler_ratio",
                                                       "step_time_busy", "comm_overlap_ratio", "comm_exposed_time"};
    entry["metrics"] = nlohmann::json::array();
    for (const auto& m : result.metrics) {
      if (std::find(kHeadline.begin(), kHeadline.end(), m.name) == kHeadline.end()) continue;
      entry["metrics"].push_back({{"name", m.name}, {"kind", m.kind}, {"unit", m.unit},
                                  {"current", m.median ? nlohmann::json(*m.median) : nlohmann::json()}});
    }
    out.push_back(entry);
  }
  return out;
}

void AddProvenance(nlohmann::json& out, const std::string& label, const ResultSet& set) {
  for (const auto& inst : set.instances) {
    if (inst.result.is_null()) continue;
    const StoredResult result = ReadInstance(inst);
    out.push_back({{"label", label}, {"source", set.source}, {"started_at", result.started_at}, {"provenance", result.provenance}});
    return;  // one per run: every instance of a run shares the build and host
  }
}

// Every instance of a run on its own page, what did not end as expected first: status, expected
// and actual colour, the suite's why, the failed checks with their detail.
nlohmann::json OutcomesJson(const ResultSet& current) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& inst : current.instances) {
    nlohmann::json failed = nlohmann::json::array();
    if (!inst.result.is_null()) {
      for (const auto& c : ReadInstance(inst).checks) {
        if (!c.passed) failed.push_back({{"name", c.name}, {"detail", c.detail}});
      }
    }
    const bool as_expected = inst.ended_as_expected();
    out.push_back({{"name", inst.name}, {"status", inst.status}, {"message", inst.message}, {"colour", Colour(inst.status)},
                   {"expect", inst.expect.empty() ? "green" : inst.expect}, {"as_expected", as_expected}, {"why", inst.why},
                   {"failed_checks", failed}});
  }
  std::stable_sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return !a["as_expected"].get<bool>() && b["as_expected"].get<bool>();
  });
  return out;
}

nlohmann::json HistoryJson(const History& h, const GatePolicy& policy, const std::string& page_dir) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& s : h.series) {
    nlohmann::json points = nlohmann::json::array(), changes = nlohmann::json::array();
    for (const auto& p : s.points) points.push_back({p.run, p.value, p.low, p.high});
    for (const auto& c : s.change_points) {
      const bool worse = s.better == "lower" ? c.after > c.before : c.after < c.before;
      changes.push_back({{"index", c.index}, {"run", s.points[c.index].run}, {"before", c.before}, {"after", c.after},
                         {"p", c.p_value}, {"worse", worse}});
    }
    // What the gate holds this metric to: the relative change it calls one (min_effect for a
    // sampled metric, tolerance for an exact one) and any absolute bound.
    const MetricRule rule = policy.rule_for(s.metric, s.kind);
    nlohmann::json gate = {{"gated", rule.gate}, {"relative", s.kind == "exact" ? rule.tolerance : rule.min_effect},
                           {"at_least", rule.at_least ? nlohmann::json(*rule.at_least) : nlohmann::json()},
                           {"at_most", rule.at_most ? nlohmann::json(*rule.at_most) : nlohmann::json()}};
    series.push_back({{"instance", s.instance}, {"metric", s.metric}, {"unit", s.unit}, {"better", s.better}, {"kind", s.kind},
                      {"points", points}, {"change_points", changes}, {"gate", gate}});
  }
  nlohmann::json runs = nlohmann::json::array();
  for (size_t r = 0; r < h.runs.size(); ++r) {
    const std::filesystem::path source(h.runs[r]);
    const bool dir = std::filesystem::is_directory(source);
    const nlohmann::json& p = h.provenance[r];
    runs.push_back({{"source", h.runs[r]}, {"started_at", h.started_at[r]},
                    {"sha", p.contains("git_sha") && p["git_sha"].is_string() ? p["git_sha"] : nlohmann::json("")},
                    {"dashboard", dir ? LinkTo(source / "dashboard.html", page_dir) : nlohmann::json()},
                    {"json", LinkTo(dir ? source / "index.json" : source, page_dir)}});
  }
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : h.problems) {
    problems.push_back({{"run", p.run}, {"instance", p.instance}, {"status", p.status}, {"message", p.message}});
  }
  return {{"runs", h.runs}, {"started_at", h.started_at}, {"run_info", runs}, {"series", series}, {"problems", problems}};
}

}  // namespace

nlohmann::json DashboardData(const DashboardInput& in) {
  nlohmann::json data = {{"title", in.title}, {"comparison", nullptr}, {"instances", nlohmann::json::array()},
                         {"outcomes", nlohmann::json::array()},
                         {"provenance", nlohmann::json::array()}, {"history", nullptr}, {"engine_pairs", nullptr}};
  if (in.comparison) data["comparison"] = ComparisonJson(*in.comparison);
  if (in.engine_pairs) data["engine_pairs"] = EnginePairsJson(*in.engine_pairs);
  if (in.current) data["instances"] = InstancesJson(in.base, *in.current, in.page_dir);
  if (in.current) data["outcomes"] = OutcomesJson(*in.current);
  if (in.base) AddProvenance(data["provenance"], "base", *in.base);
  if (in.current) AddProvenance(data["provenance"], "current", *in.current);
  if (in.history) {
    data["history"] = HistoryJson(*in.history, in.policy ? *in.policy : DefaultGatePolicy(), in.page_dir);
    if (!in.comparison) {  // a history page: every run's provenance
      for (size_t r = 0; r < in.history->runs.size(); ++r) {
        data["provenance"].push_back({{"label", "run " + std::to_string(r)}, {"source", in.history->runs[r]},
                                      {"started_at", in.history->started_at[r]}, {"provenance", in.history->provenance[r]}});
      }
    }
  }
  return data;
}

std::string JsonForScript(const nlohmann::json& data) {
  const std::string text = data.dump(-1, ' ', /*ensure_ascii=*/true);  // U+2028/9 come out escaped
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<') {
      out += "\\u003c";  // "</script>" and "<!--" can never appear
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string DashboardHtml(const DashboardInput& in) {
  // Markers are found in the template alone, so nothing inserted can be mistaken for one.
  const std::string page = DashboardTemplate();
  const size_t chartjs = page.find("@CHARTJS@"), data = page.find("@DATA@");
  if (chartjs == std::string::npos || data == std::string::npos || data < chartjs) {
    throw std::logic_error("dashboard template: markers @CHARTJS@ then @DATA@ expected");
  }
  return page.substr(0, chartjs) + ChartJsSource() + page.substr(chartjs + 9, data - chartjs - 9) +
         JsonForScript(DashboardData(in)) + page.substr(data + 6);
}

}  // namespace shardbench
