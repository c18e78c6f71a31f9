#include "reporters/trace_summary.h"

#include <algorithm>
#include <map>

#include "reporters/format.h"
#include "reporters/statistics.h"

namespace shardbench {

TraceSummary SummarizeTrace(const std::vector<profile::RankSpans>& ranks, size_t top_n) {
  TraceSummary out;
  for (const profile::RankSpans& r : ranks) {
    RankTimeSummary s;
    s.rank = r.rank;
    std::map<std::string, SpanTotal> totals;
    // Each step summed over the spans that reach into it: sorted by begin, those that begin
    // before its end and at most the longest span's length before its begin.
    std::vector<profile::Span> spans;
    int64_t longest = 0;
    for (const profile::Span& span : r.spans) {
      if (span.category == "step") continue;
      spans.push_back(span);
      longest = std::max(longest, span.end_ns - span.begin_ns);
    }
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; });
    for (const profile::Span& step : r.spans) {
      if (step.category != "step") continue;
      ++s.steps;
      auto first = std::lower_bound(spans.begin(), spans.end(), step.begin_ns - longest,
                                    [](const profile::Span& a, int64_t t) { return a.begin_ns < t; });
      auto last = std::lower_bound(first, spans.end(), step.end_ns,
                                   [](const profile::Span& a, int64_t t) { return a.begin_ns < t; });
      const profile::SpanOverlap o = profile::SummarizeSpans(std::vector<profile::Span>(first, last), step.begin_ns, step.end_ns);
      s.step_s += 1e-9 * static_cast<double>(o.window_ns);
      s.compute_s += 1e-9 * static_cast<double>(o.compute_ns);
      s.exposed_comm_s += 1e-9 * static_cast<double>(o.exposed_ns);
      s.hidden_comm_s += 1e-9 * static_cast<double>(o.communication_ns - o.exposed_ns);
      s.idle_s += 1e-9 * static_cast<double>(o.idle_ns);
    }
    for (const profile::Span& span : r.spans) {
      if (span.category == "step") continue;
      if (span.category == "optimizer") s.optimizer_s += 1e-9 * static_cast<double>(span.end_ns - span.begin_ns);
      SpanTotal& t = totals[span.name];
      t.name = span.name;
      ++t.count;
      t.seconds += 1e-9 * static_cast<double>(span.end_ns - span.begin_ns);
    }
    for (auto& [name, t] : totals) s.top.push_back(t);
    std::sort(s.top.begin(), s.top.end(), [](const SpanTotal& a, const SpanTotal& b) {
      return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
    });
    if (s.top.size() > top_n) s.top.resize(top_n);
    out.ranks.push_back(std::move(s));
  }
  auto busy = [](const RankTimeSummary& r) { return r.step_s - r.exposed_comm_s; };
  std::vector<double> busy_times;
  for (const auto& r : out.ranks) busy_times.push_back(busy(r));
  if (out.ranks.size() > 1) {
    const auto busiest = std::max_element(out.ranks.begin(), out.ranks.end(),
                                          [&](const auto& a, const auto& b) { return busy(a) < busy(b); });
    const double typical = Percentile(busy_times, 50);
    out.straggler = busiest->rank;
    out.straggler_ratio = typical > 0 ? busy(*busiest) / typical : 1.0;
  }
  return out;
}

std::string FormatTraceSummary(const TraceSummary& summary) {
  auto s = [](double seconds) { return Fixed(seconds, 3) + " s"; };
  auto share = [](double part, double whole) { return whole > 0 ? " (" + Fixed(100.0 * part / whole, 0) + "%)" : std::string(); };
  std::string text = "where the measured steps went, per rank (exposed: communication with no compute running):\n";
  for (const auto& r : summary.ranks) {
    text += "  rank " + std::to_string(r.rank) + ": " + std::to_string(r.steps) + " steps, " + s(r.step_s) +
            ": compute " + s(r.compute_s) + share(r.compute_s, r.step_s) + " (optimizer " + s(r.optimizer_s) +
            "), exposed comm " + s(r.exposed_comm_s) + share(r.exposed_comm_s, r.step_s) + ", hidden comm " +
            s(r.hidden_comm_s) + ", idle " + s(r.idle_s) + share(r.idle_s, r.step_s) + "\n";
  }
  for (const auto& r : summary.ranks) {
    text += "rank " + std::to_string(r.rank) + " top spans (total, count):\n";
    for (const auto& t : r.top) text += "  " + s(t.seconds) + "  x" + std::to_string(t.count) + "  " + t.name + "\n";
  }
  if (summary.straggler) {
    text += "straggler: rank " + std::to_string(*summary.straggler) + ", busy (step time less exposed comm) " +
            Fixed(summary.straggler_ratio, 2) + "x the median rank's\n";
  }
  return text;
}

}  // namespace shardbench
