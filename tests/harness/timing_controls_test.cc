// The scenario's timing block: a rank pinned to its share of the cores, and the calibration
// kernel turned into step_time_calibrated (the step over the machine's speed of the moment).
#include "harness/timing_controls.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "harness/metric_table.h"
#include "harness/rank_record.h"

namespace shardbench {
namespace {

int AllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  return CPU_COUNT(&set);
}

// Pinning acts on the calling thread (and what it starts): run it on a thread of its own.
TEST(TimingControls, ARankIsPinnedToItsShareOfTheCores) {
  const int cores = AllowedCores();
  std::string one, second;
  int pinned_cores = 0;
  std::thread([&] {
    one = PinToRankCores(0, 1);
    second = PinToRankCores(1, 2);
    pinned_cores = AllowedCores();
  }).join();
  EXPECT_EQ(one, "one rank: all " + std::to_string(cores) + " cores");
  EXPECT_EQ(pinned_cores, std::max(1, cores / 2)) << second;
  EXPECT_NE(second.find("of " + std::to_string(cores)), std::string::npos) << second;
  EXPECT_EQ(AllowedCores(), cores);  // this thread untouched
  EXPECT_GT(TimeCalibrationKernel(), 0.0);
}

TEST(TimingControls, CalibratedStepsDivideTheSlowestRankByTheMeanCalibration) {
  RankRecord a(3), b(3);
  a.step_seconds = {9, 0.010, 0.020};
  b.step_seconds = {9, 0.012, 0.010};
  a.calibration_seconds = {1, 0.001, 0.002};
  b.calibration_seconds = {1, 0.001, 0.002};
  const RankRecord back = RankRecord::Unpack(a.pack(), 3);
  EXPECT_EQ(back.calibration_seconds, a.calibration_seconds);
  const auto metrics = BuildMetrics({a, b}, 1, 100, 10, 5);
  const auto it =
      std::find_if(metrics.begin(), metrics.end(), [](const Metric& m) { return m.name == "step_time_calibrated"; });
  ASSERT_NE(it, metrics.end());
  EXPECT_DOUBLE_EQ(it->samples[0], 0.012 / 0.001);
  EXPECT_DOUBLE_EQ(it->samples[1], 0.020 / 0.002);
  EXPECT_DOUBLE_EQ(it->per_rank[0], 0.5 * (10 + 10));
  for (const auto& m : BuildMetrics({RankRecord(3)}, 1, 100, 10, 5)) EXPECT_NE(m.name, "step_time_calibrated");
}

// One figure a launch: the faster half of the measured steps (three of five: the middle counts),
// global tokens over the slowest rank's step; per rank its own share over its own steps.
TEST(TimingControls, FastHalfIsTheMeanOfTheFasterHalfOfTheSteps) {
  RankRecord a(6), b(6);
  a.step_seconds = {9, 0.010, 0.020, 0.010, 0.040, 0.020};
  b.step_seconds = {9, 0.020, 0.010, 0.010, 0.010, 0.010};
  const auto metrics = BuildMetrics({a, b}, 1, 100, 10, 5);
  const auto it =
      std::find_if(metrics.begin(), metrics.end(), [](const Metric& m) { return m.name == "tokens_per_s_fast_half"; });
  ASSERT_NE(it, metrics.end());
  // Slowest per step: 0.020, 0.020, 0.010, 0.040, 0.020 -> tokens/s 5000, 5000, 10000, 2500, 5000.
  ASSERT_EQ(it->samples.size(), 1u);
  EXPECT_DOUBLE_EQ(it->samples[0], (10000 + 5000 + 5000) / 3.0);
  EXPECT_DOUBLE_EQ(it->per_rank[1], 5000.0);  // rank 1: 50 tokens over 0.010 s, its fastest three
  EXPECT_EQ(it->better, "higher");
}

}  // namespace
}  // namespace shardbench
