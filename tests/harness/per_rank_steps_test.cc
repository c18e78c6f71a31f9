// Per-rank step data through repetition merging and onto the run's dashboard: each repetition
// keeps its own steps and measured window, the merged steady state is the latest, and the
// dashboard's per-rank distributions pool exactly the measured steps of every repetition.
#include <gtest/gtest.h>

#include "reporters/dashboard.h"
#include "reporters/launch_merge.h"
#include "reporters/results_writer.h"

namespace shardbench {
namespace {

// Two ranks, four steps; rank 1 waits half of every step. `from`: first measured step.
nlohmann::json Repetition(double scale, int64_t steady, int64_t from) {
  return {{"status", "ok"}, {"message", ""}, {"metrics", nlohmann::json::array()}, {"checks", nlohmann::json::array()},
          {"loss", {1, 1, 1, 1}},
          {"per_rank_steps", {{"step_seconds", {{8 * scale, 2 * scale, 2 * scale, 4 * scale}, {8 * scale, 2 * scale, 2 * scale, 4 * scale}}},
                              {"comm_wait_seconds", {{0, 0, 0, 0}, {0, scale, scale, 2 * scale}}}}},
          {"steady_state_step", steady}, {"measured_from_step", from}};
}

nlohmann::json MergedRepetitions() {
  return ToJson(MergeLaunches({{ReadResult(Repetition(1, 1, 1), "rep0"), "repetition 0"},
                               {ReadResult(Repetition(0.5, 3, 2), "rep1"), "repetition 1"}}));
}

TEST(PerRankSteps, RepetitionsKeepTheirOwnStepsAndTheLatestSteadyState) {
  const auto merged = MergedRepetitions();
  EXPECT_EQ(merged["per_rank_steps_by_repetition"].size(), 2u);
  EXPECT_EQ(merged["per_rank_steps_by_repetition"][1], Repetition(0.5, 3, 2)["per_rank_steps"]);
  EXPECT_EQ(merged["measured_from_step_by_repetition"], (nlohmann::json{1, 2}));
  EXPECT_EQ(merged["steady_state_step"], 3);
  EXPECT_EQ(merged["measured_from_step"], 2);
  EXPECT_EQ(merged["per_rank_steps"], Repetition(1, 1, 1)["per_rank_steps"]);
}

TEST(PerRankSteps, DashboardPoolsTheMeasuredStepsOfEveryRepetitionPerRank) {
  ResultSet run;
  run.instances.push_back({"x", MergedRepetitions(), "ok", "", "", true, ""});
  const auto steps = DashboardData({"t", nullptr, nullptr, &run})["instances"][0]["rank_steps"];
  ASSERT_EQ(steps.size(), 2u);
  // Rank 0 measured 2, 2, 4 (first repetition, from step 1) and 1, 2 (second, from step 2).
  EXPECT_EQ(steps[0]["step"]["n"], 5);
  EXPECT_EQ(steps[0]["step"]["min"], 1.0);
  EXPECT_EQ(steps[0]["step"]["median"], 2.0);
  EXPECT_EQ(steps[0]["step"]["max"], 4.0);
  EXPECT_EQ(steps[0]["busy"], steps[0]["step"]);  // rank 0 never waited
  EXPECT_EQ(steps[1]["busy"]["max"], 2.0);          // rank 1 was busy half of each step
  EXPECT_EQ(steps[1]["busy"]["median"], 1.0);
  EXPECT_EQ(steps[1]["rank"], 1);
}

}  // namespace
}  // namespace shardbench
