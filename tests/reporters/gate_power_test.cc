// A gate you can trust: what it did not judge is never green (UNJUDGED), what it could not have
// caught says so (the minimum detectable effect, UNDERPOWERED), and many metrics share one error
// rate (Benjamini-Hochberg). The MDE is checked against its analytic value and against
// simulation of the very test the gate runs.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/common/error.h"
#include "reporters/adaptive_repetitions.h"
#include "reporters/compare.h"
#include "reporters/sampled_verdict.h"
#include "reporters/compare_reports.h"
#include "reporters/multiple_testing.h"
#include "reporters/pooled_runs.h"
#include "reporters/power.h"
#include "tests/reporters/compare_fixtures.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

using namespace fixtures;  // NOLINT: the fixtures are this file's vocabulary

// n samples whose logs are exactly the normal quantiles (i + 0.5) / n scaled to spread `sigma`
// around log(mean): a sample with a known spread and no randomness.
std::vector<double> QuantileSamples(double mean, double sigma, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(mean * std::exp(sigma * NormalQuantile((i + 0.5) / n)));
  return out;
}

TEST(Power, QuantilesMatchTables) {
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-9);
  EXPECT_NEAR(NormalQuantile(0.8), 0.8416212335729143, 1e-9);
  EXPECT_NEAR(NormalQuantile(0.001), -3.090232306167813, 1e-9);
  EXPECT_NEAR(StudentQuantile(0.975, 18), 2.10092204024096, 1e-4);  // scipy.stats.t.ppf
  EXPECT_NEAR(StudentQuantile(0.975, 8), 2.306004135033371, 1e-3);
  EXPECT_NEAR(StudentQuantile(0.8, 8), 0.8888640821, 1e-3);
}

// The MDE from samples of a known spread, within 15% of the textbook value
// (z[1-a/2] + z[power]) * sigma * sqrt(2/n) on the log scale.
TEST(Power, MdeFromKnownSpreadMatchesTheAnalyticValue) {
  for (const double sigma : {0.02, 0.05, 0.15}) {
    for (const int n : {10, 20, 40}) {
      const auto base = QuantileSamples(1000, sigma, n), current = QuantileSamples(800, sigma, n);
      const double spread = PooledLogSpread(base, current);
      EXPECT_NEAR(spread, sigma, 0.1 * sigma) << "n=" << n;
      const double analytic = std::expm1((1.959963985 + 0.8416212336) * sigma * std::sqrt(2.0 / n));
      const double mde = MinimumDetectableEffect(spread, n, n, {"mann_whitney", 0.05, 0, 0.8});
      EXPECT_NEAR(mde / analytic, 1.0, 0.15) << "sigma=" << sigma << " n=" << n << " mde=" << mde << " analytic=" << analytic;
    }
  }
}

TEST(Power, TooFewSamplesCannotDetectAnything) {
  // 3 vs 3: the exact test's smallest two-sided p-value is 2 / C(6, 3) = 0.1 > 0.05.
  EXPECT_TRUE(std::isinf(MinimumDetectableEffect(0.01, 3, 3, {})));
  EXPECT_TRUE(std::isfinite(MinimumDetectableEffect(0.01, 4, 4, {})));  // 2/70 < 0.05
  // The minimum effect is a floor even with no spread at all.
  EXPECT_NEAR(MinimumDetectableEffect(0, 10, 10, {"mann_whitney", 0.05, 0.03, 0.8}), 0.03, 1e-12);
  // Repetitions needed fall with the target.
  const auto n10 = SamplesForMde(0.1, 0.10, {}), n5 = SamplesForMde(0.1, 0.05, {});
  ASSERT_TRUE(n10 && n5);
  EXPECT_LT(*n10, *n5);
  EXPECT_LE(MinimumDetectableEffect(0.1, *n5, *n5, {}), 0.05);
  EXPECT_GT(MinimumDetectableEffect(0.1, *n5 - 1, *n5 - 1, {}), 0.05);
}

// The reported MDE predicts what the gate's own test (Mann-Whitney, min effect) detects: an
// effect of the MDE is caught about 80% of the time, half of it rarely, twice it almost always.
TEST(Power, MdePredictsTheDetectionRateOfTheGatesTest) {
  const double cv = 0.10;
  const int n = 10, trials = 400;
  MetricRule rule;  // defaults: Mann-Whitney at 0.05, min effect 3%
  const double mde = MinimumDetectableEffect(cv, n, n, {rule.test, rule.alpha, rule.min_effect, 0.8});
  auto detection = [&](double effect) {
    int found = 0;
    for (int t = 0; t < trials; ++t) {
      MetricComparison c;
      c.better = "lower";
      c.kind = "sampled";
      JudgeSampled(c, Samples(1.0, cv, n, 1 + t), Samples(1.0 + effect, cv, n, 100000 + t), rule);
      found += c.verdict == Verdict::kRegression;
    }
    return static_cast<double>(found) / trials;
  };
  EXPECT_NEAR(detection(mde), 0.8, 0.1) << "mde " << mde;
  EXPECT_LT(detection(mde / 2), 0.35);
  EXPECT_GT(detection(2 * mde), 0.97);
}

// R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") = 0.02 0.04 0.04 0.02.
TEST(MultipleTesting, BenjaminiHochbergOnKnownLists) {
  const auto bh = AdjustPValues({0.01, 0.04, 0.03, 0.005}, "bh");
  const std::vector<double> expected{0.02, 0.04, 0.04, 0.02};
  for (size_t i = 0; i < bh.size(); ++i) EXPECT_NEAR(bh[i], expected[i], 1e-12) << i;
  const auto bonferroni = AdjustPValues({0.01, 0.04, 0.03, 0.005}, "bonferroni");
  EXPECT_NEAR(bonferroni[1], 0.16, 1e-12);
  EXPECT_EQ(AdjustPValues({0.5, 0.9}, "bonferroni")[1], 1.0);  // capped
  // Benjamini & Hochberg (1995), section 4: 15 p-values, q = 0.05 rejects the four smallest.
  const std::vector<double> paper{0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344,
                                  0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000};
  const auto q = AdjustPValues(paper, "bh");
  int rejected = 0;
  for (double v : q) rejected += v < 0.05;
  EXPECT_EQ(rejected, 4);
  EXPECT_EQ(LoneEffectAlpha(0.05, 15, "bh"), 0.05 / 15);
  EXPECT_EQ(LoneEffectAlpha(0.05, 15, "none"), 0.05);
}

// 60 metrics that did not change: uncorrected, a few are flagged by chance; corrected, none.
TEST(MultipleTesting, TheFamilyOfAComparisonSharesOneErrorRate) {
  std::vector<nlohmann::json> base_metrics, current_metrics;
  for (int i = 0; i < 60; ++i) {
    base_metrics.push_back(Sampled("m" + std::to_string(i), "lower", Samples(100, 0.05, 8, 10 + i)));
    current_metrics.push_back(Sampled("m" + std::to_string(i), "lower", Samples(100, 0.05, 8, 500 + i)));
  }
  const auto base = Set({Result("a", base_metrics)}), current = Set({Result("a", current_metrics)});
  auto alarms = [&](const std::string& correction) {
    const auto c = Compare(base, current, LoadGatePolicy(WritePolicy(correction, "correction: " + correction + "\n" +
                                                                                   "defaults: {sampled: {min_effect: 0}}\n")),
                           "2026-12-02");
    EXPECT_EQ(c.family_size, 60u);
    int n = 0;
    for (const auto& m : c.metrics) {
      n += m.verdict == Verdict::kRegression || m.verdict == Verdict::kImprovement;
      EXPECT_GE(*m.p_adjusted, *m.p_value);
    }
    return n;
  };
  EXPECT_GE(alarms("none"), 1);  // about 3 expected at alpha 0.05
  EXPECT_EQ(alarms("bh"), 0);
  EXPECT_EQ(alarms("bonferroni"), 0);
}

TEST(GateColour, TooFewSamplesAreUnjudgedNotGreen) {
  const auto base = Set({Result("a", {Sampled("tokens_per_s", "higher", {1000, 1010}), Exact("grad_bytes", {10})})});
  const auto current = Set({Result("a", {Sampled("tokens_per_s", "higher", {1005, 995}), Exact("grad_bytes", {10})})});
  const auto c = Compare(base, current, DefaultGatePolicy(), "2026-12-02");
  EXPECT_EQ(c.colour(), "UNJUDGED");
  EXPECT_EQ(c.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(c.unjudged(), 1);
  EXPECT_NE(SummaryLine(c).find("UNJUDGED: 0 regressions"), std::string::npos) << SummaryLine(c);
  EXPECT_NE(MarkdownReport(c).find("unjudged: 2 vs 2 samples"), std::string::npos) << MarkdownReport(c);
  EXPECT_NE(JUnitReport(c).find("<failure type=\"unjudged\""), std::string::npos) << JUnitReport(c);

  // The policy may accept it as a warning: green, and said so.
  const auto warn = Compare(base, current, LoadGatePolicy(WritePolicy("warn", "insufficient_data: warn\n")), "2026-12-02");
  EXPECT_EQ(warn.colour(), "GREEN");
  EXPECT_EQ(warn.exit_code(), ExitCode::kOk);
  EXPECT_EQ(warn.warned(), 1);
  EXPECT_NE(SummaryLine(warn).find("1 unjudged reported only"), std::string::npos) << SummaryLine(warn);
  // A metric the policy does not gate never holds the colour back.
  const auto ungated = Compare(base, current, LoadGatePolicy(WritePolicy("ungated", "metrics:\n  tokens_per_s: {gate: false}\n")),
                               "2026-12-02");
  EXPECT_EQ(ungated.colour(), "GREEN");
  // A regression still wins over everything.
  const auto worse = Set({Result("a", {Sampled("tokens_per_s", "higher", {1005, 995}), Exact("grad_bytes", {11})})});
  EXPECT_EQ(Compare(base, worse, DefaultGatePolicy(), "2026-12-02").colour(), "RED");
}

TEST(GateColour, AGateWiderThanMaxMdeIsUnderpoweredAndSaysWhatWouldDo) {
  const auto policy = LoadGatePolicy(WritePolicy("mde", "metrics:\n  tokens_per_s: {max_mde: 0.05}\n"));
  const auto noisy = Compare(Set({Result("a", {Sampled("tokens_per_s", "higher", Samples(1000, 0.15, 5, 1))})}),
                             Set({Result("a", {Sampled("tokens_per_s", "higher", Samples(1000, 0.15, 5, 2))})}), policy, "2026-12-02");
  ASSERT_EQ(noisy.metrics.size(), 1u);
  const MetricComparison& m = noisy.metrics[0];
  EXPECT_EQ(noisy.colour(), "UNDERPOWERED");
  EXPECT_EQ(noisy.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(m.verdict, Verdict::kUnderpowered);
  ASSERT_TRUE(m.mde && m.samples_for_max_mde);
  EXPECT_GT(*m.mde, 0.05);
  EXPECT_LE(MinimumDetectableEffect(m.log_spread, *m.samples_for_max_mde, *m.samples_for_max_mde, {}), 0.05);
  EXPECT_NE(m.detail.find("repetitions a side would reach it"), std::string::npos) << m.detail;
  EXPECT_NE(ConsoleReport(noisy).find("could have caught >= "), std::string::npos) << ConsoleReport(noisy);

  const auto quiet = Compare(Set({Result("a", {Sampled("tokens_per_s", "higher", Samples(1000, 0.003, 8, 1))})}),
                             Set({Result("a", {Sampled("tokens_per_s", "higher", Samples(1000, 0.003, 8, 2))})}), policy, "2026-12-02");
  EXPECT_EQ(quiet.colour(), "GREEN") << ConsoleReport(quiet);
  ASSERT_TRUE(quiet.metrics[0].mde);
  EXPECT_LE(*quiet.metrics[0].mde, 0.05);
  EXPECT_NE(MarkdownReport(quiet).find("no change; could have caught \\>= "), std::string::npos) << MarkdownReport(quiet);
}

// Launches of one instance, added until its gated metrics are pinned to the target.
TEST(AdaptiveRepetitions, StopEarlyOnAQuietMetricRunToMaxOnANoisyOne) {
  const AdaptiveRepetitions plan{0.10, 20, DefaultGatePolicy()};
  auto launches_until_pinned = [&](double cv) {
    const auto values = Samples(100, cv, plan.max, 42);
    std::vector<StoredResult> launches;
    for (int i = 0; i < plan.max; ++i) {
      launches.push_back(ReadResult(Result("a", {Sampled("step_time", "lower", {values[i]}), Exact("grad_bytes", {10})}), "launch"));
      if (PinnedSoFar(launches, plan).pinned) break;
    }
    return launches.size();
  };
  EXPECT_EQ(launches_until_pinned(0.01), 5u);  // the policy's min_samples: the first launch it can be judged at
  EXPECT_EQ(launches_until_pinned(0.30), 20u);
  const auto status = PinnedSoFar({ReadResult(Result("a", {Sampled("step_time", "lower", {1.0})}), "launch")}, plan);
  EXPECT_FALSE(status.pinned);
  EXPECT_TRUE(std::isinf(status.mde.at("step_time")));
  EXPECT_EQ(ParseAutoRepetitions("auto"), 20);
  EXPECT_EQ(ParseAutoRepetitions("auto:7"), 7);
  EXPECT_EQ(ParseAutoRepetitions("7"), std::nullopt);
  EXPECT_NE(testing::InputErrorOf([] { ParseAutoRepetitions("auto:1"); }).find("--repetitions auto:1"), std::string::npos);
}

// A test that no outcome could make significant judged nothing: UNDERPOWERED even without
// max_mde. 5 vs 5 launches reach 0.05 alone (smallest p 2/252), not 0.05/60 in a family of 60.
TEST(GateColour, AGateThatCouldNotCatchAnythingIsNeverGreen) {
  std::vector<nlohmann::json> base_metrics, current_metrics;
  for (int i = 0; i < 60; ++i) {
    base_metrics.push_back(Sampled("m" + std::to_string(i), "lower", Samples(100, 0.05, 5, 10 + i)));
    current_metrics.push_back(Sampled("m" + std::to_string(i), "lower", Samples(100, 0.05, 5, 500 + i)));
  }
  const auto family = Compare(Set({Result("a", base_metrics)}), Set({Result("a", current_metrics)}), DefaultGatePolicy(), "2026-12-02");
  EXPECT_EQ(family.colour(), "UNDERPOWERED") << SummaryLine(family);
  EXPECT_EQ(family.underpowered(), 60);
  ASSERT_TRUE(family.metrics[0].samples_for_max_mde);
  EXPECT_EQ(*family.metrics[0].samples_for_max_mde, 7u);  // 2 / C(14, 7) = 5.8e-4 < 0.05 / 60 = 8.3e-4
  EXPECT_NE(family.metrics[0].detail.find("at least 7 a side are needed to judge it"), std::string::npos) << family.metrics[0].detail;
  // The same five launches judge one metric on its own.
  const auto alone = Compare(Set({Result("a", {base_metrics[0]})}), Set({Result("a", {current_metrics[0]})}), DefaultGatePolicy(), "2026-12-02");
  EXPECT_EQ(alone.colour(), "GREEN") << SummaryLine(alone);
}

// Runs of the same target pooled: launches add up, a check failed anywhere is failed.
TEST(PooledRuns, LaunchesAddUpAndFailuresCarryOver) {
  auto one_launch = [](double v) {
    nlohmann::json m = Sampled("tokens_per_s", "higher", {v});
    m.erase("repetition_medians");  // a single launch has only its median
    return m;
  };
  ResultSet a = Set({Result("x", {Sampled("tokens_per_s", "higher", {10, 11}), Exact("grad_bytes", {8})})});
  ResultSet b = Set({Result("x", {one_launch(12), Exact("grad_bytes", {8})}, {{{"name", "learning"}, {"passed", false}, {"detail", "flat"}}})});
  a.instances[0].result["checks"] = {{{"name", "learning"}, {"passed", true}, {"detail", "ok"}}};
  a.instances[0].result["repetitions"] = 2;
  b.source = "night-2";
  b.instances[0].result["run_id"] = "night-2-launch";
  const ResultSet pooled = PoolResultSets({a, b});
  ASSERT_EQ(pooled.instances.size(), 1u);
  const auto& r = pooled.instances[0].result;
  EXPECT_EQ(r["metrics"][0]["repetition_medians"], nlohmann::json({10, 11, 12}));
  EXPECT_EQ(r["metrics"][0]["median"], 11);
  EXPECT_EQ(r["repetitions"], 3);
  EXPECT_FALSE(r["checks"][0]["passed"].get<bool>());
  EXPECT_EQ(r["checks"][0]["detail"], "night-2: flat");
  EXPECT_EQ(r["metrics"][1]["median"], 8);  // exact metrics from the first run
}

// Pooled launches are independent repetitions of one scenario: one launch given twice, or
// another scenario's, is refused (five copies of one run made a U test "significant").
TEST(PooledRuns, TheSameLaunchTwiceOrAnotherScenarioIsRefused) {
  ResultSet a = Set({Result("x", {Sampled("tokens_per_s", "higher", {10, 11})})});
  a.source = "night-1";
  EXPECT_NE(testing::InputErrorOf([&] { PoolResultSets({a, a}); })
                .find("merge: night-1 and night-1 hold the same launch of 'x' (run_id r)"),
            std::string::npos);
  ResultSet b = a;
  b.source = "night-2";
  b.instances[0].result["run_id"] = "r2";
  b.instances[0].result["scenario"]["config"]["world_size"] = 1;
  EXPECT_NE(testing::InputErrorOf([&] { PoolResultSets({a, b}); })
                .find("'x' ran another scenario in night-2 than in night-1 (scenario.config.world_size differs)"),
            std::string::npos)
      << testing::InputErrorOf([&] { PoolResultSets({a, b}); });
}

TEST(GatePolicy, BadPowerFieldsNameFileLineAndField) {
  auto error = [](const std::string& text) {
    return testing::InputErrorOf([&] { LoadGatePolicy(WritePolicy("bad", text)); });
  };
  EXPECT_NE(error("metrics:\n  tokens_per_s: {max_mde: -0.05}\n").find("bad.yaml:2: metrics.tokens_per_s.max_mde: expected a relative change"),
            std::string::npos)
      << error("metrics:\n  tokens_per_s: {max_mde: -0.05}\n");
  EXPECT_NE(error("defaults:\n  sampled:\n    alpha: 0.05\n    mde_max: 0.1\n").find("bad.yaml:4: defaults.sampled.mde_max: unknown rule field"),
            std::string::npos);
  EXPECT_NE(error("correction: holm\n").find("bad.yaml:1: correction: expected one of bh, bonferroni, none, got 'holm'"),
            std::string::npos)
      << error("correction: holm\n");
  EXPECT_NE(error("# a comment\ngates: {}\n").find("bad.yaml:2: gates: unknown section"), std::string::npos);
  EXPECT_NE(error("insufficient_data: ignore\n").find("bad.yaml:1: insufficient_data: expected one of unjudged, warn"),
            std::string::npos);
}

}  // namespace
}  // namespace shardbench
