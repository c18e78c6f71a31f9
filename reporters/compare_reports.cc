#include "reporters/compare_reports.h"

#include <cstdio>
#include <sstream>

#include "reporters/format.h"

namespace shardbench {
namespace {

std::string Confidence(const MetricComparison& m) {
  if (m.kind == "exact") return "exact";
  std::string s;
  if (m.ci_low && m.ci_high) s = "[" + FormatDelta(*m.ci_low) + ", " + FormatDelta(*m.ci_high) + "]";
  if (m.p_value) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "p=%.3g", *m.p_value);
    s += (s.empty() ? "" : " ") + std::string(buf);
  }
  return s.empty() ? "-" : s;
}

std::string VerdictText(const MetricComparison& m) {
  std::string v = VerdictName(m.verdict);
  if (!m.suppressed.empty()) v += " (suppressed: " + m.suppressed + ")";
  if (m.verdict == Verdict::kRegression && !m.gated) v += " (not gated)";
  return v;
}

bool Interesting(const MetricComparison& m) { return m.verdict != Verdict::kNoChange; }

// Exact metrics show their exact difference ("+2,048 bytes (+0.8%)"), sampled ones the ratio.
std::string DeltaText(const MetricComparison& m) {
  if (m.kind != "exact" || m.current == m.base) return FormatDelta(m.ratio);
  const double d = m.current - m.base;
  const std::string unit = m.unit == "bytes" ? "bytes" : m.unit;
  return (d > 0 ? "+" : "") + FormatValue(d, "count") + " " + unit + " (" + FormatDelta(m.ratio) + ")";
}

std::string Plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

std::string SummaryLine(const Comparison& c) {
  int improvements = 0, insufficient = 0;
  for (const auto& m : c.metrics) {
    improvements += m.verdict == Verdict::kImprovement;
    insufficient += m.verdict == Verdict::kInsufficientData;
  }
  std::ostringstream s;
  s << (c.red() ? "RED" : "GREEN") << ": " << Plural(c.regressions(), "regression") << ", "
    << Plural(c.failed_checks(), "failed check") << ", " << Plural(static_cast<int>(c.failures.size()), "run problem") << "; "
    << Plural(improvements, "improvement") << ", " << insufficient << " with insufficient data, "
    << c.metrics.size() << " metrics compared";
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
  for (const auto& n : c.notes) s << "note: " << n << "\n";
  s << SummaryLine(c) << "\n";
  return s.str();
}

std::string MarkdownReport(const Comparison& c) {
  std::ostringstream s;
  s << "### shardbench compare: " << (c.red() ? "🔴 " : "🟢 ") << EscapeMarkdown(SummaryLine(c)) << "\n\n";
  s << "Base `" << EscapeMarkdown(c.base_source) << "`, current `" << EscapeMarkdown(c.current_source) << "`, policy `"
    << EscapeMarkdown(c.policy_source) << "`.\n\n";
  auto table_header = [&] {
    s << "| instance | metric | base | current | delta | confidence | verdict |\n|---|---|---:|---:|---:|---|---|\n";
  };
  auto row = [&](const MetricComparison& m) {
    s << "| " << EscapeMarkdown(m.instance) << " | " << EscapeMarkdown(m.metric) << " | " << EscapeMarkdown(FormatValue(m.base, m.unit))
      << " | " << EscapeMarkdown(FormatValue(m.current, m.unit)) << " | " << EscapeMarkdown(DeltaText(m)) << " | "
      << EscapeMarkdown(Confidence(m)) << " | " << (m.red() ? "**" : "") << EscapeMarkdown(VerdictText(m)) << (m.red() ? "**" : "")
      << " |\n";
  };
  int interesting = 0;
  for (const auto& m : c.metrics) interesting += Interesting(m);
  if (interesting > 0) {
    table_header();
    for (const auto& m : c.metrics) {
      if (Interesting(m)) row(m);
    }
    s << "\n";
  }
  bool any_failed = false;
  for (const auto& k : c.checks) {
    if (k.passed) continue;
    if (!any_failed) s << "**Failed checks**\n\n";
    any_failed = true;
    s << "- `" << EscapeMarkdown(k.instance) << "` " << EscapeMarkdown(k.name) << (k.expected_red ? " (expected red)" : "") << ": "
      << EscapeMarkdown(k.detail) << "\n";
  }
  if (any_failed) s << "\n";
  if (!c.failures.empty()) {
    s << "**Run problems**\n\n";
    for (const auto& f : c.failures) s << "- " << EscapeMarkdown(f) << "\n";
    s << "\n";
  }
  if (!c.notes.empty()) {
    s << "<details><summary>Notes (" << c.notes.size() << ")</summary>\n\n";
    for (const auto& n : c.notes) s << "- " << EscapeMarkdown(n) << "\n";
    s << "\n</details>\n\n";
  }
  if (static_cast<size_t>(interesting) < c.metrics.size()) {
    s << "<details><summary>Unchanged (" << c.metrics.size() - interesting << " metrics)</summary>\n\n";
    table_header();
    for (const auto& m : c.metrics) {
      if (!Interesting(m)) row(m);
    }
    s << "\n</details>\n";
  }
  return s.str();
}

std::string JUnitReport(const Comparison& c) {
  std::ostringstream cases;
  int tests = 0, failures = 0, errors = 0;
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
    if (m.red()) {
      ++failures;
      cases << "<failure message=\"" << EscapeXml(summary) << "\"/>";
    } else if (m.verdict == Verdict::kInsufficientData) {
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
  std::ostringstream s;
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<testsuites>\n<testsuite name=\"shardbench compare\" tests=\"" << tests << "\" failures=\"" << failures << "\" errors=\""
    << errors << "\">\n"
    << cases.str() << "</testsuite>\n</testsuites>\n";
  return s.str();
}

}  // namespace shardbench
