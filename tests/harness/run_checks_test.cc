// The checks that judge a run from its ranks' records (harness/run_checks.h), and the table
// that orders them and judges the threshold checks from their metrics (harness/check_table.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/check_table.h"
#include "harness/run_checks.h"

namespace shardbench {
namespace {

std::vector<RankRecord> TwoRanks(const std::vector<double>& loss0, const std::vector<double>& loss1) {
  std::vector<RankRecord> all(2, RankRecord(static_cast<int64_t>(loss0.size())));
  for (size_t s = 0; s < loss0.size(); ++s) {
    all[0].local_loss[s] = loss0[s], all[1].local_loss[s] = loss1[s];
    const double mean = (loss0[s] + loss1[s]) / 2;
    all[0].loss[s] = all[1].loss[s] = mean;
  }
  return all;
}

TEST(RunChecks, FiniteNamesTheFirstNonFiniteStepAndTheRanksThatDiverged) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(FiniteCheck(TwoRanks({3, 2, 1}, {3, 2, 1}), 3).passed);
  const Check c = FiniteCheck(TwoRanks({3, 2, nan}, {3, std::numeric_limits<double>::infinity(), nan}), 5);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.detail.find("at step 1 of 5"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("rank(s) 1 diverged"), std::string::npos) << c.detail;
}

TEST(RunChecks, LearningNeedsTheLossToDropTrainablesToMoveAndFrozenOnesToStay) {
  const std::vector<std::pair<std::string, bool>> trainable = {{"lora_a", true}, {"base", false}};
  const Fingerprints before = {{"lora_a", {1, 1}}, {"base", {2, 2}}};
  const Fingerprints moved = {{"lora_a", {1, 1.5}}, {"base", {2, 2}}};
  EXPECT_TRUE(LearningCheck(3, 2, trainable, before, moved).passed);
  EXPECT_FALSE(LearningCheck(3, 3, trainable, before, moved).passed);  // loss did not drop
  const Check stopped = LearningCheck(3, std::numeric_limits<double>::quiet_NaN(), trainable, before, moved);
  EXPECT_FALSE(stopped.passed);  // training stopped: no trained loss to compare
  EXPECT_NE(stopped.detail.find("step 0's batch: loss 3.000000 -> nan trained (did not drop)"), std::string::npos)
      << stopped.detail;
  const Check stuck = LearningCheck(3, 2, trainable, before, before);
  EXPECT_FALSE(stuck.passed);
  EXPECT_NE(stuck.detail.find("trainable 'lora_a' did not change"), std::string::npos) << stuck.detail;
  const Fingerprints frozen_moved = {{"lora_a", {1, 1.5}}, {"base", {2, 2.5}}};
  const Check leaked = LearningCheck(3, 2, trainable, before, frozen_moved);
  EXPECT_FALSE(leaked.passed);
  EXPECT_NE(leaked.detail.find("frozen 'base' changed"), std::string::npos) << leaked.detail;
}

// A weight that held a NaN before and after training did not change (NaN != NaN must not say
// so); one that became NaN did.
TEST(RunChecks, LearningCountsANaNThatStayedAsUnchangedAndOneThatAppearedAsChanged) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<std::string, bool>> trainable = {{"lora_a", true}, {"base", false}};
  const Fingerprints before = {{"lora_a", {1, 1}}, {"base", {nan, nan}}};
  const Check stayed = LearningCheck(nan, nan, trainable, before, {{"lora_a", {nan, nan}}, {"base", {nan, nan}}});
  EXPECT_NE(stayed.detail.find("trainable unchanged: 0, frozen changed: 0"), std::string::npos) << stayed.detail;
  const Fingerprints finite = {{"lora_a", {1, 1}}, {"base", {2, 2}}};
  const Check appeared = LearningCheck(3, 2, trainable, finite, {{"lora_a", {1, 2}}, {"base", {2, nan}}});
  EXPECT_NE(appeared.detail.find("frozen 'base' changed"), std::string::npos) << appeared.detail;
}

// grad_memory is judged from the grad_blowup metric (harness/check_table.h): one figure.
Metric GradBlowup(std::vector<double> per_rank) {
  Metric m = Declared("grad_blowup");
  m.per_rank = per_rank;
  m.samples = {*std::max_element(per_rank.begin(), per_rank.end())};
  return m;
}

Scenario AskingGradMemory(double limit) {
  Scenario s;
  s.world_size = 2;
  s.checks.max_grad_blowup = limit;
  return s;
}

TEST(CheckTable, GradMemoryJudgesTheGradBlowupMetricAgainstItsLimit) {
  RunFacts facts;
  facts.trainable_bytes = 1000;  // rank 1 holds 1000 gradient bytes for the 500 it owns
  const std::vector<Check> blown = JudgeThresholdChecks(AskingGradMemory(1.5), {GradBlowup({1, 2})}, {}, facts);
  ASSERT_EQ(blown.size(), 1u);
  EXPECT_EQ(blown[0].name, "grad_memory");
  EXPECT_FALSE(blown[0].passed);
  EXPECT_NE(blown[0].detail.find("a rank holds 1000 gradient bytes for 500 trainable bytes it owns: 2.00x (limit 1.50x)"),
            std::string::npos) << blown[0].detail;
  EXPECT_TRUE(JudgeThresholdChecks(AskingGradMemory(2.0), {GradBlowup({1, 2})}, {}, facts)[0].passed);
  EXPECT_TRUE(JudgeThresholdChecks(AskingGradMemory(0), {GradBlowup({1, 2})}, {}, facts).empty());  // not asked
}

TEST(CheckTable, GradMemoryIsNeverGreenOnBytesNobodyMeasured) {
  RunFacts facts;
  facts.trainable_bytes = 200;
  const Check nan_rank = JudgeThresholdChecks(AskingGradMemory(1.1), {GradBlowup({1, std::nan("")})}, {}, facts)[0];
  EXPECT_FALSE(nan_rank.passed);
  EXPECT_NE(nan_rank.detail.find("not judged: rank 1's grad_blowup was not measured"), std::string::npos) << nan_rank.detail;
  const Check listed = JudgeThresholdChecks(AskingGradMemory(1.1), {}, {{"grad_blowup", "no gradients read"}}, facts)[0];
  EXPECT_FALSE(listed.passed);
  EXPECT_NE(listed.detail.find("not judged: grad_blowup was not measured (no gradients read)"), std::string::npos) << listed.detail;
  EXPECT_FALSE(JudgeThresholdChecks(AskingGradMemory(1.1), {}, {}, facts)[0].passed);
}

TEST(CheckTable, ChecksTakeTheTablesOrderAndAnUndeclaredOneIsOurBug) {
  const std::vector<Check> ordered =
      InTableOrder({{"frozen_dtype", true, ""}, {"loss_parity", true, ""}, {"finite", true, ""}, {"learning", true, ""}});
  std::vector<std::string> names;
  for (const auto& c : ordered) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"finite", "learning", "loss_parity", "frozen_dtype"}));
  EXPECT_THROW(InTableOrder({{"finite", true, ""}, {"speed", true, ""}}), std::logic_error);
  for (const CheckRow& row : CheckTable()) {  // a threshold check's metric is one the metric table declares
    if (row.metric) EXPECT_NO_THROW(Declared(row.metric)) << row.name;
  }
}

}  // namespace
}  // namespace shardbench
