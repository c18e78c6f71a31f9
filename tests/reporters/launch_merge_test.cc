// The one merge of launches (reporters/launch_merge.h), as `run` merges repetitions and `merge`
// pools runs: metrics and checks matched by name, launches counted through earlier merges, the
// worst status, per-launch data kept per launch.
#include "reporters/launch_merge.h"

#include <gtest/gtest.h>

#include "reporters/results_writer.h"
#include "tests/reporters/compare_fixtures.h"

namespace shardbench {
namespace {

using fixtures::Exact;
using fixtures::Result;
using fixtures::Sampled;

StoredResult Launch(double tokens_per_s, bool learned, const std::string& status = "ok") {
  nlohmann::json r = Result("x", {Exact("grad_bytes", {8}), Sampled("tokens_per_s", "higher", {tokens_per_s})},
                            {{{"name", "learning"}, {"passed", learned}, {"detail", learned ? "ok" : "flat"}}});
  r["metrics"][1].erase("repetition_medians");  // one launch: only its median
  r["status"] = status;
  r["message"] = status == "ok" ? "" : "check 'learning' failed: flat";
  r["loss"] = {tokens_per_s};
  return ReadResult(r, "launch");
}

TEST(LaunchMerge, OneLaunchListsItsLaunchExplicitly) {
  const StoredResult one = MergeLaunches({{Launch(10, true), "repetition 0"}});
  EXPECT_EQ(one.repetitions, 1);
  EXPECT_EQ(one.metric("tokens_per_s")->repetition_medians, std::vector<double>{10});
  EXPECT_EQ(one.loss_by_repetition, (std::vector<std::vector<double>>{{10}}));
  EXPECT_FALSE(one.per_rank_steps_by_repetition);  // none recorded: none listed
}

TEST(LaunchMerge, MetricsAndChecksByNameTheWorstStatusWins) {
  StoredResult reordered = Launch(14, false, "failed");
  std::swap(reordered.metrics[0], reordered.metrics[1]);  // matched by name, not position
  reordered.metrics.push_back(reordered.metrics[0]);
  reordered.metrics.back().name = "step_time";  // only this launch measured it
  const StoredResult m = MergeLaunches(
      {{Launch(10, true), "repetition 0"}, {Launch(12, true), "repetition 1"}, {reordered, "repetition 2"}});
  EXPECT_EQ(m.repetitions, 3);
  EXPECT_EQ(m.metric("tokens_per_s")->repetition_medians, (std::vector<double>{10, 12, 14}));
  EXPECT_EQ(m.metric("tokens_per_s")->samples, (std::vector<double>{10, 12, 14}));
  EXPECT_EQ(m.metric("tokens_per_s")->median, 12);
  EXPECT_EQ(m.metric("grad_bytes")->median, 8);
  ASSERT_TRUE(m.metric("step_time"));
  EXPECT_EQ(m.metric("step_time")->repetition_medians, std::vector<double>{14});
  ASSERT_EQ(m.checks.size(), 1u);
  EXPECT_FALSE(m.checks[0].passed);
  EXPECT_EQ(m.checks[0].detail, "repetition 2: flat");
  EXPECT_EQ(m.status, "failed");
  EXPECT_EQ(m.message, "check 'learning' failed: flat");
  EXPECT_EQ(m.loss_by_repetition, (std::vector<std::vector<double>>{{10}, {12}, {14}}));
}

TEST(LaunchMerge, AMergeMergedAgainCountsEveryLaunch) {
  const StoredResult night1 = MergeLaunches({{Launch(10, true), "repetition 0"}, {Launch(11, true), "repetition 1"}});
  const StoredResult night2 = MergeLaunches({{Launch(12, true), "repetition 0"}});
  // Through the file form, as `merge` reads runs back.
  const StoredResult pooled = MergeLaunches(
      {{ReadResult(ToJson(night1), "night-1"), "night-1"}, {ReadResult(ToJson(night2), "night-2"), "night-2"}});
  EXPECT_EQ(pooled.repetitions, 3);
  EXPECT_EQ(pooled.metric("tokens_per_s")->repetition_medians, (std::vector<double>{10, 11, 12}));
  EXPECT_EQ(pooled.loss_by_repetition->size(), 3u);
  EXPECT_EQ(ToJson(ReadResult(ToJson(pooled), "again")).dump(),
            ToJson(pooled).dump());  // the writer mirrors the reader
}

}  // namespace
}  // namespace shardbench
