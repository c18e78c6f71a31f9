// The checks that judge a run from its ranks' records (harness/run_checks.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
  EXPECT_TRUE(LearningCheck({3, 2}, trainable, before, moved).passed);
  EXPECT_FALSE(LearningCheck({3, 3}, trainable, before, moved).passed);  // loss did not drop
  const Check stuck = LearningCheck({3, 2}, trainable, before, before);
  EXPECT_FALSE(stuck.passed);
  EXPECT_NE(stuck.detail.find("trainable 'lora_a' did not change"), std::string::npos) << stuck.detail;
  const Fingerprints frozen_moved = {{"lora_a", {1, 1.5}}, {"base", {2, 2.5}}};
  const Check leaked = LearningCheck({3, 2}, trainable, before, frozen_moved);
  EXPECT_FALSE(leaked.passed);
  EXPECT_NE(leaked.detail.find("frozen 'base' changed"), std::string::npos) << leaked.detail;
}

TEST(RunChecks, GradMemoryIsTheWorstRanksGradientBytesOverWhatItOwns) {
  std::vector<RankRecord> all(2, RankRecord(1));
  all[0].engine_held[static_cast<size_t>(memory::Category::kGrads)] = 500;
  all[1].engine_held[static_cast<size_t>(memory::Category::kGrads)] = 1000;  // owns 500 of 1000 trainable bytes
  const Check blown = GradMemoryCheck(all, 1000, 2, 1.5);
  EXPECT_FALSE(blown.passed);
  EXPECT_NE(blown.detail.find("2.00x (limit 1.50x)"), std::string::npos) << blown.detail;
  EXPECT_TRUE(GradMemoryCheck(all, 1000, 2, 2.0).passed);
}

TEST(RunChecks, GradMemoryIsNeverGreenOnBytesNobodyMeasured) {
  std::vector<RankRecord> all(2, RankRecord(2));
  all[0].engine_held[static_cast<size_t>(memory::Category::kGrads)] = 100;
  all[1].engine_held[static_cast<size_t>(memory::Category::kGrads)] = std::numeric_limits<double>::quiet_NaN();
  const Check c = GradMemoryCheck(all, 200, 2, 1.1);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.detail.find("not judged: rank 1"), std::string::npos) << c.detail;
}

}  // namespace
}  // namespace shardbench
