// The gate's statistics and verdicts on synthetic samples with known shifts and known nulls,
// policy parsing, and the reporters on fixed results.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/common/error.h"
#include "reporters/compare.h"
#include "reporters/sampled_verdict.h"
#include "reporters/change_points.h"
#include "reporters/compare_reports.h"
#include "reporters/format.h"
#include "reporters/history.h"
#include "reporters/significance.h"
#include "tests/reporters/compare_fixtures.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

using namespace fixtures;  // NOLINT: the fixtures are this file's vocabulary

// Expected values from enumerating all C(10, 5) rank assignments (and, for ties, the normal
// approximation with tie and continuity corrections scipy's "asymptotic" method uses).
TEST(MannWhitney, PValuesMatchEnumeration) {
  auto r = MannWhitneyU({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u, 0);
  EXPECT_NEAR(r.p_value, 2.0 / 252, 1e-12);
  // Interleaved: no evidence of a shift.
  r = MannWhitneyU({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10});
  EXPECT_EQ(r.u, 10);
  EXPECT_NEAR(r.p_value, 0.6904761904761905, 1e-12);
  // Ties: midranks, normal approximation.
  r = MannWhitneyU({1, 2, 2, 3}, {2, 3, 4, 4});
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.u, 2.5);
  EXPECT_NEAR(r.p_value, 0.13416918012812581, 1e-12);
}

TEST(MannWhitney, NullsStayQuietShiftsAreFound) {
  int false_alarms = 0, found = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const auto a = Samples(100, 0.02, 10, seed), b = Samples(100, 0.02, 10, seed + 1000);
    false_alarms += MannWhitneyU(a, b).p_value < 0.05;
    const auto shifted = Samples(110, 0.02, 10, seed + 2000);
    found += MannWhitneyU(a, shifted).p_value < 0.05;
  }
  EXPECT_LE(false_alarms, 20);  // alpha 5% of 200 = 10 expected
  EXPECT_GE(found, 198);        // a 10% shift at 2% noise is 5 standard deviations
}

TEST(Bootstrap, IntervalCoversTheTrueRatioAndIsDeterministic) {
  const auto base = Samples(100, 0.02, 10, 7), current = Samples(105, 0.02, 10, 8);
  const auto ci = BootstrapMedianRatio(base, current);
  EXPECT_LT(ci.low, 1.05);
  EXPECT_GT(ci.high, 1.05);
  EXPECT_GT(ci.low, 1.0);
  const auto again = BootstrapMedianRatio(base, current);
  EXPECT_EQ(ci.low, again.low);
  EXPECT_EQ(ci.high, again.high);
}

MetricComparison Judge(const std::vector<double>& base, const std::vector<double>& current, const std::string& better,
                       const MetricRule& rule = {}) {
  MetricComparison c;
  c.better = better;
  c.kind = "sampled";
  JudgeSampled(c, base, current, rule);
  return c;
}

TEST(CompareVerdicts, SampledShiftsNullsAndTooFewSamples) {
  const auto base = Samples(1000, 0.01, 5, 11);
  EXPECT_EQ(Judge(base, Samples(900, 0.01, 5, 12), "higher").verdict, Verdict::kRegression);   // tokens/s down 10%
  EXPECT_EQ(Judge(base, Samples(1100, 0.01, 5, 13), "higher").verdict, Verdict::kImprovement);
  EXPECT_EQ(Judge(base, Samples(900, 0.01, 5, 14), "lower").verdict, Verdict::kImprovement);    // step time down
  EXPECT_EQ(Judge(base, Samples(1000, 0.01, 5, 15), "higher").verdict, Verdict::kNoChange);
  // Significant but below the minimum effect: no change, said so.
  const auto tiny_shift = Judge(Samples(1000, 0.001, 5, 16), Samples(1010, 0.001, 5, 17), "higher");
  EXPECT_EQ(tiny_shift.verdict, Verdict::kNoChange);
  EXPECT_NE(tiny_shift.detail.find("below the minimum effect"), std::string::npos) << tiny_shift.detail;
  EXPECT_EQ(Judge({1000, 1001}, Samples(500, 0.01, 5, 18), "higher").verdict, Verdict::kUnjudged);
  MetricRule bootstrap;
  bootstrap.test = "bootstrap";
  EXPECT_EQ(Judge(base, Samples(900, 0.01, 5, 12), "higher", bootstrap).verdict, Verdict::kRegression);
  EXPECT_EQ(Judge(base, Samples(1000, 0.01, 5, 15), "higher", bootstrap).verdict, Verdict::kNoChange);
}

TEST(CompareVerdicts, ExactMetricsGateEveryChangeByDefault) {
  const auto base = Set({Result("a", {Exact("grad_bytes", {74752, 74752}), Exact("comm_all_gather_bytes", {100, 100})})});
  const auto same = Compare(base, base, DefaultGatePolicy(), "2026-12-02");
  EXPECT_FALSE(same.red()) << ConsoleReport(same);
  const auto grown = Set({Result("a", {Exact("grad_bytes", {74752, 76800})})});  // and the all-gather vanished
  const auto c = Compare(base, grown, DefaultGatePolicy(), "2026-12-02");
  EXPECT_TRUE(c.red());
  ASSERT_EQ(c.metrics.size(), 2u);
  EXPECT_EQ(c.metrics[0].verdict, Verdict::kRegression);
  EXPECT_NE(c.metrics[0].detail.find("+2048 bytes"), std::string::npos) << c.metrics[0].detail;
  EXPECT_NE(c.metrics[0].detail.find("rank 1: 74752 -> 76800"), std::string::npos) << c.metrics[0].detail;
  EXPECT_EQ(c.metrics[1].verdict, Verdict::kImprovement);  // 100 -> 0 (omitted when zero)
  EXPECT_EQ(c.exit_code(), ExitCode::kRegression);
}

// A tolerance is a figure's known jitter (instructions_per_step under callgrind): inside it,
// neither direction is a change; past it, worse is a regression and better an improvement.
TEST(CompareVerdicts, AnExactToleranceHoldsBothWays) {
  GatePolicy policy = DefaultGatePolicy();
  policy.metric_rules.push_back({"instructions_per_step", "{tolerance: 0.01}"});
  const auto base = Set({Result("a", {Exact("instructions_per_step", {1000000})})});
  auto verdict = [&](double current) {
    const auto c = Compare(base, Set({Result("a", {Exact("instructions_per_step", {current})})}), policy, "2026-12-06");
    return c.metrics.at(0).verdict;
  };
  EXPECT_EQ(verdict(1009000), Verdict::kNoChange);
  EXPECT_EQ(verdict(991000), Verdict::kNoChange);
  EXPECT_EQ(verdict(1011000), Verdict::kRegression);
  EXPECT_EQ(verdict(989000), Verdict::kImprovement);
}

TEST(GatePolicy, RulesByGlobSuppressionsExpireBadFieldsAreNamed) {
  const auto p = LoadGatePolicy(WritePolicy("ok", R"(
defaults:
  exact: {tolerance: 0.01}
metrics:
  "comm_*": {tolerance: 0}
  host_rss_peak: {gate: false}
suppressions:
  - {metric: grad_bytes, instance: "flat*", reason: "known, fixed in #12", expires: 2026-12-31}
)"));
  EXPECT_EQ(p.rule_for("comm_all_gather_bytes", "exact").tolerance, 0);
  EXPECT_EQ(p.rule_for("grad_bytes", "exact").tolerance, 0.01);
  EXPECT_FALSE(p.rule_for("host_rss_peak", "sampled").gate);
  EXPECT_NE(p.suppression_for("flat_lora", "grad_bytes", "2026-12-31"), nullptr);
  const Suppression* expired = nullptr;
  EXPECT_EQ(p.suppression_for("flat_lora", "grad_bytes", "2027-01-01", &expired), nullptr);
  EXPECT_NE(expired, nullptr);

  auto error = [](const std::string& text) {
    try {
      LoadGatePolicy(WritePolicy("bad", text));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("metrics:\n  x: {alpha: 2}\n").find("metrics.x.alpha: expected a number in [0"), std::string::npos);
  EXPECT_NE(error("metrics:\n  x: {tset: bootstrap}\n").find("metrics.x.tset: unknown rule field"), std::string::npos);
  EXPECT_NE(error("suppressions:\n  - {metric: x, expires: 2027-01-01}\n").find("needs a reason"), std::string::npos);
  EXPECT_NE(error("suppressions:\n  - {metric: x, reason: y, expires: soon}\n").find("expected a date YYYY-MM-DD"), std::string::npos);
  EXPECT_NE(error("metrics:\n  x: {at_least: high}\n").find("metrics.x.at_least: expected a number, got 'high'"), std::string::npos);
  EXPECT_NE(error("gates: {}\n").find("unknown section"), std::string::npos);
  EXPECT_NE(error("metrics: [\n").find("not valid YAML"), std::string::npos);
}

TEST(CompareVerdicts, SuppressedRegressionsAreReportedNotRedFailedChecksAlwaysAre) {
  const auto base = Set({Result("flat_lora", {Exact("grad_bytes", {100})})});
  const auto cur = Set({Result("flat_lora", {Exact("grad_bytes", {200})},
                               {{{"name", "loss_parity"}, {"passed", false}, {"detail", "max relative 1e-3"}}})});
  const auto policy = LoadGatePolicy(WritePolicy("sup", "suppressions:\n  - {metric: grad_bytes, reason: known, expires: 2026-12-31}\n"));
  auto c = Compare(base, cur, policy, "2026-12-02");
  EXPECT_EQ(c.regressions(), 0);
  EXPECT_NE(c.metrics[0].suppressed.find("known"), std::string::npos);
  EXPECT_EQ(c.failed_checks(), 1);
  EXPECT_TRUE(c.red());
  c = Compare(base, cur, policy, "2027-01-05");  // expired: red again, and said so
  EXPECT_EQ(c.regressions(), 1);
  bool noted = false;
  for (const auto& n : c.notes) noted |= n.find("expired on 2026-12-31") != std::string::npos;
  EXPECT_TRUE(noted);
}

// An absolute hold: an overlap ratio that was already low in the base is still red, an
// unchanged healthy one is not; a budget on an exact metric likewise.
TEST(CompareVerdicts, PolicyHoldsAreAbsolute) {
  const auto policy = LoadGatePolicy(WritePolicy("hold", "metrics:\n  kernel_overlap_ratio: {at_least: 0.8}\n"
                                                         "  grad_bytes: {at_most: 150}\n"));
  auto ratio = [](double v) { return Sampled("kernel_overlap_ratio", "higher", {v, v, v, v, v}); };
  auto verdict = [&](double base, double current, double base_bytes, double current_bytes) {
    const auto c = Compare(Set({Result("a", {ratio(base), Exact("grad_bytes", {base_bytes})})}),
                           Set({Result("a", {ratio(current), Exact("grad_bytes", {current_bytes})})}), policy, "2026-12-02");
    return std::make_pair(c.metrics.at(0), c.metrics.at(1));
  };
  auto [held, bytes] = verdict(0.95, 0.95, 100, 100);
  EXPECT_EQ(held.verdict, Verdict::kNoChange) << held.detail;
  EXPECT_EQ(bytes.verdict, Verdict::kNoChange) << bytes.detail;
  std::tie(held, bytes) = verdict(0.5, 0.5, 200, 200);  // no change against the base, past both holds
  EXPECT_EQ(held.verdict, Verdict::kRegression);
  EXPECT_NE(held.detail.find("holds it at least 0.8000, current 0.5000"), std::string::npos) << held.detail;
  EXPECT_EQ(bytes.verdict, Verdict::kRegression);
  EXPECT_NE(bytes.detail.find("at most 150"), std::string::npos) << bytes.detail;
  // Too few samples for the relative test still leaves the hold to judge.
  const auto few = Compare(Set({Result("a", {Sampled("kernel_overlap_ratio", "higher", {0.9})})}),
                           Set({Result("a", {Sampled("kernel_overlap_ratio", "higher", {0.3})})}), policy, "2026-12-02");
  EXPECT_EQ(few.metrics.at(0).verdict, Verdict::kRegression) << few.metrics.at(0).detail;
  EXPECT_NE(LoadGatePolicy(WritePolicy("hold_ok", "metrics:\n  x: {at_least: 0.5}\n")).rule_for("x", "sampled").at_least, std::nullopt);
}


// Two torch releases under the same peer scenario: the regression is judged as any other and
// the notes say which versions each side ran.
TEST(CompareVerdicts, VersionsOfEachSideAreNoted) {
  auto with_torch = [](const std::string& version, double tokens) {
    nlohmann::json r = Result("peers[engine=torch_fsdp2]", {Sampled("tokens_per_s", "higher", {tokens, tokens, tokens, tokens, tokens * 1.001})});
    r["provenance"] = {{"torch", version}, {"peer", {{"torch", version}, {"transformers", "4.57.6"}}}};
    return r;
  };
  const auto c = Compare(Set({with_torch("2.10.0+cpu", 100)}), Set({with_torch("2.11.0+cpu", 80)}), DefaultGatePolicy(), "2026-12-02");
  EXPECT_EQ(c.regressions(), 1);
  bool noted = false;
  for (const auto& n : c.notes) noted |= n.find("versions differ: peer.torch \"2.10.0+cpu\" -> \"2.11.0+cpu\"") != std::string::npos;
  EXPECT_TRUE(noted) << ::testing::PrintToString(c.notes);
}

TEST(CompareVerdicts, MissingInstancesAreRedConfigChangesAreNoted) {
  const auto base = Set({Result("a", {Exact("x", {1})}), Result("b", {Exact("x", {1})})});
  const auto cur = Set({Result("a", {Exact("x", {1})}, {}, 20)});
  const auto c = Compare(base, cur, DefaultGatePolicy(), "2026-12-02");
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_NE(c.failures[0].find("'b'"), std::string::npos);
  ASSERT_EQ(c.scenario_changes.size(), 1u);
  EXPECT_EQ(c.scenario_changes[0].first, "a");
  EXPECT_EQ(c.scenario_changes[0].second, std::vector<std::string>{"train.steps 10 -> 20"});
}

// A gated metric the current run did not write (or wrote without samples) keeps the gate from
// green and is named; with the scenario changed it is a note (the new config may not measure it).
TEST(CompareVerdicts, AGatedMetricMissingFromCurrentIsARunProblem) {
  const std::vector<double> reps{100, 101, 99, 100, 100};
  const auto base = Set({Result("a", {Sampled("tokens_per_s", "higher", reps), Exact("x", {1})})});
  auto c = Compare(base, Set({Result("a", {Exact("x", {1})})}), DefaultGatePolicy(), "2026-12-04");
  EXPECT_EQ(c.colour(), "RED");
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_NE(c.failures[0].find("run problem: gated metric tokens_per_s is missing"), std::string::npos) << c.failures[0];
  EXPECT_NE(QuietReport(c).find("gated metric tokens_per_s"), std::string::npos) << QuietReport(c);

  nlohmann::json no_samples = Sampled("tokens_per_s", "higher", {1});
  no_samples["samples"] = no_samples["repetition_medians"] = nlohmann::json::array();
  no_samples["median"] = nullptr;
  c = Compare(base, Set({Result("a", {no_samples, Exact("x", {1})})}), DefaultGatePolicy(), "2026-12-04");
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_NE(c.failures[0].find("tokens_per_s has no samples in the current results (the base has 5)"), std::string::npos)
      << c.failures[0];

  c = Compare(base, Set({Result("a", {Exact("x", {1})}, {}, 20)}), DefaultGatePolicy(), "2026-12-04");
  EXPECT_TRUE(c.failures.empty()) << ::testing::PrintToString(c.failures);
  const auto policy = WritePolicy("ungated_tokens.yaml", "metrics:\n  tokens_per_s: {gate: false}\n");
  c = Compare(base, Set({Result("a", {Exact("x", {1})})}), LoadGatePolicy(policy), "2026-12-04");
  EXPECT_TRUE(c.failures.empty()) << ::testing::PrintToString(c.failures);
  EXPECT_TRUE(c.green());
}

TEST(CompareReports, MarkdownAndJUnitCarryEveryVerdictEscaped) {
  const auto base = Set({Result("a|b<x>", {Sampled("tokens_per_s", "higher", {1000, 1002, 998, 1001, 999}), Exact("grad_bytes", {10})})});
  const auto cur = Set({Result("a|b<x>", {Sampled("tokens_per_s", "higher", {900, 902, 898, 901, 899}), Exact("grad_bytes", {10})},
                               {{{"name", "learning"}, {"passed", false}, {"detail", "loss \"rose\" & <fell>"}}})});
  const auto c = Compare(base, cur, DefaultGatePolicy(), "2026-12-02");
  const std::string md = MarkdownReport(c);
  EXPECT_NE(md.find("| a\\|b\\<x\\> | tokens\\_per\\_s | 1,000 tokens/s | 900.00 tokens/s | -10.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("**regression; could have caught \\>= 3.1%**"), std::string::npos) << md;
  EXPECT_NE(md.find("RED: 1 regression, 1 failed check"), std::string::npos) << md;
  EXPECT_NE(md.find("Unchanged (1 metrics)"), std::string::npos) << md;
  const std::string xml = JUnitReport(c);
  EXPECT_NE(xml.find("tests=\"3\" failures=\"2\" errors=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("classname=\"a|b&lt;x&gt;\" name=\"check learning\"><failure message=\"loss &quot;rose&quot; &amp; &lt;fell&gt;\"/>"),
            std::string::npos) << xml;
  EXPECT_EQ(xml.find("<fell>"), std::string::npos);
}

// A nightly's worth of metrics stays under GitHub's comment limit; the failed check and the
// regressions come first and what was left out is counted.
TEST(CompareReports, MarkdownStaysUnderTheCommentLimit) {
  std::vector<nlohmann::json> base_results, current_results;
  for (int i = 0; i < 400; ++i) {
    std::vector<nlohmann::json> b, c;
    for (int k = 0; k < 10; ++k) {
      const std::string metric = "metric_" + std::to_string(k) + "_bytes";
      b.push_back(Exact(metric, {1000}));
      c.push_back(Exact(metric, {i == 7 && k == 3 ? 2000.0 : 1000.0}));
    }
    const std::string name = "nightly_instance_with_a_long_name_" + std::to_string(i);
    base_results.push_back(Result(name, b));
    current_results.push_back(
        Result(name, c, i == 9 ? std::vector<nlohmann::json>{{{"name", "learning"}, {"passed", false}, {"detail", "rose"}}}
                               : std::vector<nlohmann::json>{}));
  }
  const auto c = Compare(Set(base_results), Set(current_results), DefaultGatePolicy(), "2026-12-04");
  ASSERT_EQ(c.metrics.size(), 4000u);
  const std::string md = MarkdownReport(c);
  EXPECT_LE(md.size(), kMarkdownLimit);
  EXPECT_NE(md.find("RED: 1 regression, 1 failed check"), std::string::npos);
  EXPECT_NE(md.find("`nightly\\_instance\\_with\\_a\\_long\\_name\\_9` learning: rose"), std::string::npos) << md.substr(0, 2000);
  EXPECT_NE(md.find("| nightly\\_instance\\_with\\_a\\_long\\_name\\_7 | metric\\_3\\_bytes |"), std::string::npos);
  EXPECT_NE(md.find("more rows and lines are in the full report"), std::string::npos);
  EXPECT_NE(md.rfind("</details>"), std::string::npos);  // the folded section is closed
}

// A scenario change (here train.steps) is said once for its instance, with what moved under it,
// not listed among the regressions of instances that ran the same thing.
TEST(CompareReports, MarkdownGroupsWhatMovedWithAScenarioChange) {
  const auto base = Set({Result("changed", {Exact("a_bytes", {100}), Exact("b_bytes", {100})}, {}, 10),
                         Result("same", {Exact("a_bytes", {100})}, {}, 10)});
  const auto cur = Set({Result("changed", {Exact("a_bytes", {200}), Exact("b_bytes", {300})}, {}, 20),
                        Result("same", {Exact("a_bytes", {150})}, {}, 10)});
  const auto c = Compare(base, cur, DefaultGatePolicy(), "2026-12-04");
  ASSERT_EQ(c.scenario_changes.size(), 1u);
  EXPECT_EQ(c.scenario_changes[0].first, "changed");
  const std::string md = MarkdownReport(c);
  const size_t heading = md.find("**Scenario changed: `changed`** (train.steps 10 -\\> 20)");
  ASSERT_NE(heading, std::string::npos) << md;
  EXPECT_EQ(md.find("Scenario changed", heading + 3), std::string::npos) << "said once per instance:\n" << md;
  const size_t same_row = md.find("| same | a\\_bytes |"), changed_row = md.find("| changed | a\\_bytes |");
  ASSERT_NE(same_row, std::string::npos) << md;
  ASSERT_NE(changed_row, std::string::npos) << md;
  EXPECT_LT(same_row, heading);     // the unchanged scenario's regression first
  EXPECT_GT(changed_row, heading);  // the changed one's metrics under its heading
  EXPECT_GT(md.find("| changed | b\\_bytes |"), heading);
  EXPECT_NE(ConsoleReport(c).find("scenario changed: changed: train.steps 10 -> 20"), std::string::npos) << ConsoleReport(c);
}

// An exact metric that is not a whole number keeps its digits: a ratio that fell by 1.2363 is
// not "-1" (the grad_blowup of a config change).
TEST(CompareReports, ExactDeltasKeepTheirDigits) {
  nlohmann::json base_metric = Exact("grad_blowup", {3.4726}), current_metric = Exact("grad_blowup", {2.2363});
  base_metric["unit"] = current_metric["unit"] = "ratio";
  const auto c = Compare(Set({Result("a", {base_metric})}), Set({Result("a", {current_metric})}), DefaultGatePolicy(), "2026-12-04");
  ASSERT_EQ(c.metrics.size(), 1u);
  EXPECT_NE(c.metrics[0].detail.find("exact: -1.2363 ratio"), std::string::npos) << c.metrics[0].detail;
  EXPECT_NE(MarkdownReport(c).find("| 3.4726 | 2.2363 | -1.2363 ratio (-35.6%) |"), std::string::npos) << MarkdownReport(c);
  EXPECT_EQ(ExactNumber(261632), "261632");
  EXPECT_EQ(ExactNumber(0.1), "0.1");
  EXPECT_EQ(ExactNumber(-1.2363), "-1.2363");
}

// A metric with too few samples under `insufficient_data: warn` is a skipped testcase, counted
// on the suite; every count and the time sit on <testsuite> and <testsuites>.
TEST(CompareReports, JUnitCountsSkippedAndTime) {
  const auto base = Set({Result("a", {Sampled("tokens_per_s", "higher", {1000, 1001}), Exact("grad_bytes", {10})})});
  const auto cur = Set({Result("a", {Sampled("tokens_per_s", "higher", {1000, 1002}), Exact("grad_bytes", {10})})});
  const auto policy = WritePolicy("warn_on_few.yaml", "insufficient_data: warn\n");
  auto c = Compare(base, cur, LoadGatePolicy(policy), "2026-12-04");
  c.seconds = 1.5;
  const std::string xml = JUnitReport(c);
  const std::string counts = "tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\" time=\"1.500\"";
  EXPECT_NE(xml.find("<testsuites " + counts + ">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"shardbench compare\" " + counts + ">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"gate tokens_per_s\"><skipped message="), std::string::npos) << xml;
}

}  // namespace
}  // namespace shardbench

namespace shardbench {
namespace {

using namespace fixtures;  // NOLINT: the fixtures are this file's vocabulary

TEST(ChangePoints, FindsAStepAndItsRunIgnoresNoise) {
  std::vector<double> series = Samples(100, 0.01, 12, 21);
  const auto after = Samples(110, 0.01, 10, 22);
  series.insert(series.end(), after.begin(), after.end());
  const auto found = DetectChangePoints(series);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].index, 12u);
  EXPECT_NEAR(found[0].after / found[0].before, 1.10, 0.02);  // 1% noise on ~10 points a side
  EXPECT_LT(found[0].p_value, 0.05);
  EXPECT_TRUE(DetectChangePoints(Samples(100, 0.01, 22, 23)).empty());
  EXPECT_TRUE(DetectChangePoints(std::vector<double>(20, 5.0)).empty());  // constant: nothing to find
  // Deterministic: the same series, the same answer.
  EXPECT_EQ(DetectChangePoints(series)[0].p_value, found[0].p_value);
}

// Nightly peer runs across a torch upgrade: the shift is found at the run where the versions
// changed, and the report says which.
TEST(History, AShiftAtAVersionChangeNamesTheVersions) {
  std::vector<ResultSet> runs;
  const auto tokens = Samples(100, 0.005, 12, 41);
  for (size_t r = 0; r < tokens.size(); ++r) {
    const bool upgraded = r >= 6;
    nlohmann::json result = Result("peers[engine=torch_fsdp2]", {Sampled("tokens_per_s", "higher", {tokens[r] * (upgraded ? 0.8 : 1.0)})});
    result["provenance"] = {{"torch", "2.11.0"}, {"peer", {{"torch", upgraded ? "2.11.0" : "2.10.0"}, {"peft", "0.18.1"}}}};
    result["started_at"] = "2026-11-" + std::string(r + 1 < 10 ? "0" : "") + std::to_string(r + 1) + "T02:00:00Z";
    ResultSet set = Set({result});
    set.source = "run-" + std::to_string(r);
    runs.push_back(set);
  }
  const History h = BuildHistory(runs, "*", "tokens_per_s");
  ASSERT_EQ(h.series.size(), 1u);
  ASSERT_EQ(h.series[0].change_points.size(), 1u);
  EXPECT_EQ(h.series[0].points[h.series[0].change_points[0].index].run, 6u);
  EXPECT_EQ(VersionChangeAt(h, 6), "peer torch 2.10.0 -> 2.11.0");
  EXPECT_EQ(VersionChangeAt(h, 5), "");
  EXPECT_NE(HistoryConsoleReport(h).find("versions changed at this run: peer torch 2.10.0 -> 2.11.0"), std::string::npos)
      << HistoryConsoleReport(h);
}

TEST(ChangePoints, TwoStepsBothFound) {
  std::vector<double> series = Samples(100, 0.005, 10, 31);
  for (double mean : {120.0, 90.0}) {
    const auto part = Samples(mean, 0.005, 10, static_cast<uint64_t>(mean));
    series.insert(series.end(), part.begin(), part.end());
  }
  const auto found = DetectChangePoints(series);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].index, 10u);
  EXPECT_EQ(found[1].index, 20u);
}

}  // namespace
}  // namespace shardbench

namespace shardbench {
namespace {

using namespace fixtures;  // NOLINT: the fixtures are this file's vocabulary

// The reports of one fixed comparison, byte for byte (tests/reporters/golden/). After an intended change
// of the format, regenerate with SHARDBENCH_UPDATE_GOLDEN=1 and review the diff.
TEST(CompareReports, GoldenMarkdownAndJUnit) {
  const auto base = Set({Result("flat_lora", {Sampled("tokens_per_s", "higher", {1000, 1002, 998, 1001, 999}),
                                              Exact("grad_bytes", {259584, 259584}), Exact("optim_state_bytes", {149504, 149504})}),
                         Result("smoke", {Exact("grad_bytes", {10})})});
  const auto cur = Set({Result("flat_lora", {Sampled("tokens_per_s", "higher", {1100, 1102, 1098, 1101, 1099}),
                                             Exact("grad_bytes", {259584, 261632}), Exact("optim_state_bytes", {149504, 149504})},
                               {{{"name", "learning"}, {"passed", true}, {"detail", "loss dropped"}}})});
  auto c = Compare(base, cur, DefaultGatePolicy(), "2026-12-02");
  EXPECT_GE(c.seconds, 0.0);
  c.seconds = 0.125;  // the one figure that varies between runs
  const std::string dir = std::string(SHARDBENCH_SOURCE_DIR) + "/tests/reporters/golden/";
  for (const auto& [file, text] : {std::pair<std::string, std::string>{"compare_report.md", MarkdownReport(c)},
                                   {"compare_report.junit.xml", JUnitReport(c)}}) {
    if (std::getenv("SHARDBENCH_UPDATE_GOLDEN")) std::ofstream(dir + file) << text;
    std::ifstream in(dir + file);
    const std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, golden) << file << " differs from the golden output (SHARDBENCH_UPDATE_GOLDEN=1 regenerates it)";
  }
}

}  // namespace
}  // namespace shardbench
