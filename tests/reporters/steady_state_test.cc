// Steady-state detection on planted series: a warmup of known length is found (to the step:
// MSER's batch point is trimmed), a single slow first step is found, and pure noise, a
// constant series and a lone spike in the steady part give 0.
#include <gtest/gtest.h>

#include <random>

#include "reporters/steady_state.h"

namespace shardbench {
namespace {

// Step times around 1 with +-5% uniform noise from a fixed seed (mt19937 is specified by the
// standard, unlike its distributions, so the series is the same everywhere).
std::vector<double> Noisy(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<double> x;
  for (size_t i = 0; i < n; ++i) x.push_back(1.0 + 0.1 * (static_cast<double>(gen()) / 4294967296.0 - 0.5));
  return x;
}

TEST(SteadyState, FindsAPlantedWarmupOfEightSteps) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<double> x = Noisy(60, seed);
    for (int i = 0; i < 8; ++i) x[i] *= 3;
    EXPECT_EQ(SteadyStateStep(x), 8) << "seed " << seed;
  }
}

TEST(SteadyState, FindsASingleSlowFirstStep) {
  std::vector<double> x = Noisy(20, 4);
  x[0] = 3;
  EXPECT_EQ(SteadyStateStep(x), 1);
  std::vector<double> short_run = Noisy(10, 5);  // step by step below 25 steps
  short_run[0] = short_run[1] = 2;
  EXPECT_EQ(SteadyStateStep(short_run), 2);
}

// The smoke scenario's slowest-rank step times (ms) as measured here: MSER alone cuts at 5,
// into some of the fastest steps, where the prefix's mean no longer stands out; trimmed to
// the step first, the one slow first step is found.
TEST(SteadyState, FindsTheSmokeRunsSlowFirstStepWhereMserOvershoots) {
  EXPECT_EQ(SteadyStateStep({28.9, 11.6, 14.7, 11.3, 10.7, 13.6, 13.7, 15.2, 16.0, 17.2, 16.1, 12.1, 15.3, 16.9, 14.3,
                             16.9, 14.7, 14.0, 17.2, 11.9, 12.3, 11.9}),
            1);
}

TEST(SteadyState, NoiseAConstantAndALoneSpikeHaveNoWarmup) {
  for (uint32_t seed : {6u, 7u, 8u}) EXPECT_EQ(SteadyStateStep(Noisy(60, seed)), 0) << "seed " << seed;
  EXPECT_EQ(SteadyStateStep(std::vector<double>(30, 0.25)), 0);
  std::vector<double> spike = Noisy(60, 9);
  spike[10] = 3;  // steps 0-9 were already steady: a hiccup, not warmup
  EXPECT_EQ(SteadyStateStep(spike), 0);
  EXPECT_EQ(SteadyStateStep({}), 0);
  EXPECT_EQ(SteadyStateStep({5, 1, 1}), 0);  // too short to tell
}

}  // namespace
}  // namespace shardbench
