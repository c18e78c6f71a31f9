#include "reporters/compare_reports.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "reporters/format.h"

namespace shardbench {
namespace {

std::string Confidence(const MetricComparison& m) {
  if (m.kind == "exact") return "exact";
  std::string s;
  if (m.ci_low && m.ci_high) s = "[" + FormatDelta(*m.ci_low) + ", " + FormatDelta(*m.ci_high) + "]";
  if (m.p_value) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "p=%.3g", *m.p_value);
    s += (s.empty() ? "" : " ") + std::string(buf);
    if (m.p_adjusted && *m.p_adjusted != *m.p_value) {
      std::snprintf(buf, sizeof(buf), " (adj. %.3g)", *m.p_adjusted);
      s += buf;
    }
  }
  return s.empty() ? "-" : s;
}

// What the test could have caught, beside every verdict of a sampled metric.
std::string MdeText(const MetricComparison& m) {
  if (!m.mde) return "";
  if (!std::isfinite(*m.mde)) {
    return "could not have caught any change with " + std::to_string(m.base_samples) + " vs " +
           std::to_string(m.current_samples) + " samples";
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "could have caught >= %.1f%%", 100 * *m.mde);
  return buf;
}

std::string VerdictText(const MetricComparison& m) {
  std::string v = VerdictName(m.verdict);
  if (!m.suppressed.empty()) v += " (suppressed: " + m.suppressed + ")";
  if (m.verdict == Verdict::kRegression && !m.gated) v += " (not gated)";
  if (m.verdict == Verdict::kUnjudged) {
    v += !m.gated ? " (not gated)" : m.warn_only ? " (warning only)" : "";
    v += ": " + std::to_string(m.base_samples) + " vs " + std::to_string(m.current_samples) + " samples";
  }
  if (m.verdict == Verdict::kUnderpowered && m.samples_for_max_mde) {
    v += " (~" + std::to_string(*m.samples_for_max_mde) + " a side would do)";
  }
  const std::string mde = MdeText(m);
  if (!mde.empty()) v += "; " + mde;
  return v;
}

// What a reader must see: every verdict but "no change", except metrics the policy does not
// gate that could not be judged (init times of one launch): those are folded with the rest.
bool Interesting(const MetricComparison& m) {
  return m.verdict != Verdict::kNoChange && !(m.verdict == Verdict::kUnjudged && !m.gated);
}

// Exact metrics show their exact difference ("+2,048 bytes (+0.8%)"), sampled ones the ratio.
std::string DeltaText(const MetricComparison& m) {
  if (m.kind != "exact" || m.current == m.base) return FormatDelta(m.ratio);
  const double d = m.current - m.base;
  const std::string unit = m.unit == "bytes" ? "bytes" : m.unit;
  const std::string amount = d == std::floor(d) ? FormatValue(d, "count") : ExactNumber(d);  // never rounded to 0 or 1
  return (d > 0 ? "+" : "") + amount + " " + unit + " (" + FormatDelta(m.ratio) + ")";
}

std::string Plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::string ColourMark(const Comparison& c) {
  const std::string colour = c.colour();
  return colour == "RED" ? "🔴 " : colour == "GREEN" ? "🟢 " : "🟡 ";
}

}  // namespace

std::string SummaryLine(const Comparison& c) {
  int improvements = 0;
  for (const auto& m : c.metrics) improvements += m.verdict == Verdict::kImprovement;
  std::ostringstream s;
  s << c.colour() << ": " << Plural(c.regressions(), "regression") << ", " << Plural(c.failed_checks(), "failed check") << ", "
    << Plural(static_cast<int>(c.failures.size()), "run problem") << ", " << c.unjudged() << " unjudged, " << c.underpowered()
    << " underpowered; " << Plural(improvements, "improvement") << ", " << c.metrics.size() << " metrics compared";
  if (c.warned() > 0) s << " (" << c.warned() << " unjudged reported only)";
  if (c.family_size > 1) s << "; " << (c.correction == "bh" ? "Benjamini-Hochberg" : c.correction) << " over " << c.family_size;
  return s.str();
}

std::string QuietReport(const Comparison& c) {
  std::string out = SummaryLine(c) + "\n";
  for (const auto& f : c.failures) out += "  " + f + "\n";
  return out;
}

std::string PowerLine(const Comparison& c) {
  std::vector<const MetricComparison*> unchanged;
  for (const auto& m : c.metrics) {
    if (m.gated && m.mde && (m.verdict == Verdict::kNoChange || m.verdict == Verdict::kUnderpowered)) unchanged.push_back(&m);
  }
  if (unchanged.empty()) return "";
  std::sort(unchanged.begin(), unchanged.end(), [](auto* a, auto* b) { return *a->mde < *b->mde; });
  const MetricComparison* widest = unchanged.back();
  std::ostringstream s;
  s << "power: " << unchanged.size() << " gated sampled metric" << (unchanged.size() == 1 ? "" : "s") << " unchanged; ";
  const double median = *unchanged[unchanged.size() / 2]->mde;
  auto could = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "could have caught >= %.1f%%", 100 * v);
    return std::isfinite(v) ? std::string(buf) : std::string("could not have caught any change");
  };
  s << "the median one " << could(median) << ", the widest (" << widest->metric << " on " << widest->instance << ") "
    << could(*widest->mde);
  return s.str();
}


std::string ConsoleReport(const Comparison& c) {
  std::ostringstream s;
  char line[512];
  std::snprintf(line, sizeof(line), "%-40s %-28s %14s %14s %22s  %s\n", "instance", "metric", "base", "current", "delta", "verdict");
  s << line;
  for (const auto& m : c.metrics) {
    if (!Interesting(m)) continue;
    std::snprintf(line, sizeof(line), "%-40s %-28s %14s %14s %22s  %s\n", m.instance.c_str(), m.metric.c_str(),
                  FormatValue(m.base, m.unit).c_str(), FormatValue(m.current, m.unit).c_str(), DeltaText(m).c_str(),
                  VerdictText(m).c_str());
    s << line << "    " << m.detail << "\n";
  }
  for (const auto& k : c.checks) {
    if (k.passed) continue;
    s << "check " << k.instance << " / " << k.name << ": FAILED" << (k.expected_red ? " (expected: the suite wants it red)" : "")
      << "\n    " << k.detail << "\n";
  }
  for (const auto& f : c.failures) s << "problem: " << f << "\n";
  for (const auto& [instance, warnings] : c.peer_warnings) {
    for (const auto& w : warnings) s << "peer warned: " << instance << ": " << w << "\n";
  }
  for (const auto& [instance, diffs] : c.scenario_changes) s << "scenario changed: " << instance << ": " << Joined(diffs) << "\n";
  for (const auto& n : c.notes) s << "note: " << n << "\n";
  const std::string power = PowerLine(c);
  if (!power.empty()) s << power << "\n";
  s << SummaryLine(c) << "\n";
  return s.str();
}

namespace {

// A report that must stay under a size: the structure (headings, table headers, closing tags)
// always goes in; an item (a table row, a bullet) goes in while it and `kReserve` more fit, and
// is counted as left out otherwise, so the end can say how many.
class CappedText {
 public:
  explicit CappedText(size_t limit) : limit_(limit) {}
  void structure(const std::string& text) { text_ += text; }
  void item(const std::string& text) {
    if (text_.size() + text.size() + kReserve <= limit_) {
      text_ += text;
    } else {
      ++left_out_;
    }
  }
  int left_out() const { return left_out_; }
  const std::string& str() const { return text_; }

 private:
  static constexpr size_t kReserve = 2000;  // room for the structure still to come and the last line
  size_t limit_;
  std::string text_;
  int left_out_ = 0;
};

}  // namespace

std::string MarkdownReport(const Comparison& c) {
  CappedText s(kMarkdownLimit);
  s.structure("### shardbench compare: " + ColourMark(c) + EscapeMarkdown(SummaryLine(c)) + "\n\n");
  s.structure("Base `" + EscapeMarkdown(c.base_source) + "`, current `" + EscapeMarkdown(c.current_source) + "`, policy `" +
              EscapeMarkdown(c.policy_source) + "`.\n\n");
  if (const std::string power = PowerLine(c); !power.empty()) s.structure(EscapeMarkdown(power) + "\n\n");
  const std::string table_header =
      "| instance | metric | base | current | delta | confidence | verdict |\n|---|---|---:|---:|---:|---|---|\n";
  auto row = [](const MetricComparison& m) {
    return "| " + EscapeMarkdown(m.instance) + " | " + EscapeMarkdown(m.metric) + " | " + EscapeMarkdown(FormatValue(m.base, m.unit)) +
           " | " + EscapeMarkdown(FormatValue(m.current, m.unit)) + " | " + EscapeMarkdown(DeltaText(m)) + " | " +
           EscapeMarkdown(Confidence(m)) + " | " + (m.red() ? "**" : "") + EscapeMarkdown(VerdictText(m)) + (m.red() ? "**" : "") +
           " |\n";
  };
  // Failed checks and run problems first after the verdict: short, and what a reader acts on.
  bool any_failed = false;
  for (const auto& k : c.checks) {
    if (k.passed) continue;
    if (!any_failed) s.structure("**Failed checks**\n\n");
    any_failed = true;
    s.item("- `" + EscapeMarkdown(k.instance) + "` " + EscapeMarkdown(k.name) + (k.expected_red ? " (expected red)" : "") + ": " +
           EscapeMarkdown(k.detail) + "\n");
  }
  if (any_failed) s.structure("\n");
  if (!c.failures.empty()) {
    s.structure("**Run problems**\n\n");
    for (const auto& f : c.failures) s.item("- " + EscapeMarkdown(f) + "\n");
    s.structure("\n");
  }
  if (!c.peer_warnings.empty()) {
    s.structure("**Warnings the peer's libraries raised**\n\n");
    for (const auto& [instance, warnings] : c.peer_warnings) {
      for (const auto& w : warnings) s.item("- `" + EscapeMarkdown(instance) + "` " + EscapeMarkdown(w) + "\n");
    }
    s.structure("\n");
  }
  // Metrics that moved on an unchanged scenario; then, once per instance whose scenario changed,
  // its differences and the metrics that moved with them (not a regression of the same thing).
  int interesting = 0, moved_alone = 0;
  for (const auto& m : c.metrics) {
    interesting += Interesting(m);
    moved_alone += Interesting(m) && !c.scenario_change(m.instance);
  }
  if (moved_alone > 0) {
    s.structure(table_header);
    for (const auto& m : c.metrics) {
      if (Interesting(m) && !c.scenario_change(m.instance)) s.item(row(m));
    }
    s.structure("\n");
  }
  for (const auto& [instance, diffs] : c.scenario_changes) {
    s.structure("**Scenario changed: `" + EscapeMarkdown(instance) + "`** (" + EscapeMarkdown(Joined(diffs)) +
                "); what moved with it:\n\n");
    bool any = false;
    for (const auto& m : c.metrics) {
      if (m.instance != instance || !Interesting(m)) continue;
      if (!any) s.structure(table_header);
      any = true;
      s.item(row(m));
    }
    s.structure(any ? "\n" : "nothing.\n\n");
  }
  if (!c.notes.empty()) {
    s.structure("<details><summary>Notes (" + std::to_string(c.notes.size()) + ")</summary>\n\n");
    for (const auto& n : c.notes) s.item("- " + EscapeMarkdown(n) + "\n");
    s.structure("\n</details>\n\n");
  }
  if (static_cast<size_t>(interesting) < c.metrics.size()) {
    s.structure("<details><summary>Unchanged (" + std::to_string(c.metrics.size() - interesting) + " metrics)</summary>\n\n" +
                table_header);
    for (const auto& m : c.metrics) {
      if (!Interesting(m)) s.item(row(m));
    }
    s.structure("\n</details>\n");
  }
  if (s.left_out() > 0) {
    s.structure("\n**" + std::to_string(s.left_out()) + " more rows and lines are in the full report** (this one stops under " +
                std::to_string(kMarkdownLimit) + " characters, for GitHub's comment limit): `shardbench compare BASE CURRENT "
                "--html report.html`, or the console report.\n");
  }
  return s.str();
}

std::string JUnitReport(const Comparison& c) {
  std::ostringstream cases;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  for (const auto& k : c.checks) {
    ++tests;
    cases << "  <testcase classname=\"" << EscapeXml(k.instance) << "\" name=\"check " << EscapeXml(k.name) << "\">";
    if (!k.passed && !k.expected_red) {
      ++failures;
      cases << "<failure message=\"" << EscapeXml(k.detail) << "\"/>";
    } else if (!k.passed) {
      cases << "<system-out>" << EscapeXml("failed as the suite expects: " + k.detail) << "</system-out>";
    }
    cases << "</testcase>\n";
  }
  for (const auto& m : c.metrics) {
    if (!m.gated) continue;
    ++tests;
    cases << "  <testcase classname=\"" << EscapeXml(m.instance) << "\" name=\"gate " << EscapeXml(m.metric) << "\">";
    const std::string summary = FormatValue(m.base, m.unit) + " -> " + FormatValue(m.current, m.unit) + " (" +
                                DeltaText(m) + "): " + VerdictText(m) + "; " + m.detail;
    if (m.blocks_green()) {  // red, or not judged as the policy requires: a failure, not a skip
      ++failures;
      cases << "<failure type=\"" << VerdictName(m.verdict) << "\" message=\"" << EscapeXml(summary) << "\"/>";
    } else if (m.verdict == Verdict::kUnjudged) {
      ++skipped;
      cases << "<skipped message=\"" << EscapeXml(summary) << "\"/>";
    } else {
      cases << "<system-out>" << EscapeXml(summary) << "</system-out>";
    }
    cases << "</testcase>\n";
  }
  for (const auto& f : c.failures) {
    ++tests;
    ++errors;
    cases << "  <testcase classname=\"shardbench\" name=\"run\"><error message=\"" << EscapeXml(f) << "\"/></testcase>\n";
  }
  // The counts JUnit viewers read, on the suite and the document; time: what judging took.
  char counts[160];
  std::snprintf(counts, sizeof(counts), "tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\"", tests,
                failures, errors, skipped, c.seconds);
  std::ostringstream s;
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<testsuites " << counts << ">\n<testsuite name=\"shardbench compare\" " << counts << ">\n"
    << cases.str() << "</testsuite>\n</testsuites>\n";
  return s.str();
}

}  // namespace shardbench
