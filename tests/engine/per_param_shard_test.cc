// The per-parameter (FSDP2) engine across processes: the same losses and parameters as the
// unsharded reference at world sizes 1-3, with and without LoRA, resharding after forward or
// not, accumulating micro-batches, clipping; exact communication and gradient bytes.
#include <gtest/gtest.h>

#include "engine/shard/dim0_layout.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

TEST(Dim0Layout, PaddedRowsAndEmptyLastRanks) {
  const auto l = shard::ComputeDim0Layout({5, 3}, 4);  // 2 rows per rank: 2, 2, 1, 0 real rows
  EXPECT_EQ(l.rows_per_rank, 2);
  EXPECT_EQ(l.row_numel, 3);
  EXPECT_EQ(l.padded_numel(), 6);
  const int64_t want[] = {2, 2, 1, 0};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(l.local_rows(r), want[r]) << "rank " << r;
  EXPECT_EQ(l.first_row(3), 5);
  const auto one = shard::ComputeDim0Layout({7}, 1);
  EXPECT_EQ(one.rows_per_rank, 7);
  EXPECT_EQ(one.local_rows(0), 7);
}

class PerParamParity : public ::testing::TestWithParam<std::tuple<int, std::string, std::string>> {};

TEST_P(PerParamParity, MatchesUnshardedReference) {
  const auto [ws, policy, mode] = GetParam();
  std::vector<std::string> args{"per-param-parity", policy};
  if (!mode.empty()) args.push_back(mode);
  auto run = testing::RunRankWorker(ws, args);
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, PerParamParity,
                         ::testing::Values(std::make_tuple(1, "transformer_block", ""),
                                           std::make_tuple(2, "transformer_block", ""),
                                           std::make_tuple(3, "transformer_block", ""),
                                           std::make_tuple(2, "lora_separate", ""),
                                           std::make_tuple(3, "none", ""),
                                           std::make_tuple(2, "transformer_block", "keep"),
                                           std::make_tuple(3, "transformer_block", "accumulate"),
                                           std::make_tuple(2, "transformer_block", "clip")));

class PerParamCommBytes : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(PerParamCommBytes, ExactFromShapesFrozenNeverReduceScattered) {
  const auto [ws, policy] = GetParam();
  auto run = testing::RunRankWorker(ws, {"per-param-comm-bytes", policy});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, PerParamCommBytes,
                         ::testing::Combine(::testing::Values(2, 3),
                                            ::testing::Values("transformer_block", "lora_separate")));

class Prefetch : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(Prefetch, SameCollectivesAndLossesOneMoreUnitAtThePeak) {
  const auto [ws, engine] = GetParam();
  auto run = testing::RunRankWorker(ws, {"prefetch", engine});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(Engines, Prefetch,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values("flat", "per_param")));

class Evaluate : public ::testing::TestWithParam<std::tuple<int, std::string, std::string>> {};

// The learning check's same-batch loss (Trainer::evaluate): equal to the training step's loss
// on the same weights and batch, nothing left unsharded, no parameter moved; lower once trained.
TEST_P(Evaluate, EqualsTheStepsLossLeavesNothingUnshardedAndDropsOnceTrained) {
  const auto [ws, engine, reshard] = GetParam();
  auto run = testing::RunRankWorker(ws, {"evaluate", engine, reshard});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(Engines, Evaluate,
                         ::testing::Combine(::testing::Values(2), ::testing::Values("reference", "flat", "per_param"),
                                            ::testing::Values("reshard", "keep")));

class FrozenStoredBf16 : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

// Frozen base weights held bf16 beside fp32 adapters, without mixed precision: the per-param
// engine gathers such units as bytes (as FSDP2 does), the flat engine with lora_separate keeps
// one dtype per unit; both match the reference built the same way.
TEST_P(FrozenStoredBf16, GatheredExactlyTrainedLikeTheReference) {
  const auto [ws, engine] = GetParam();
  auto run = testing::RunRankWorker(ws, {"frozen-bf16", engine});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(Engines, FrozenStoredBf16,
                         ::testing::Values(std::make_tuple(1, "per_param"), std::make_tuple(2, "per_param"),
                                           std::make_tuple(3, "per_param"), std::make_tuple(2, "flat")));

// World size, engine, lora|full, wrap policy.
class ActivationCheckpointing
    : public ::testing::TestWithParam<std::tuple<int, std::string, std::string, std::string>> {};

TEST_P(ActivationCheckpointing, SameFp32ResultsLessActivationMemory) {
  const auto [ws, engine, lora, policy] = GetParam();
  auto run = testing::RunRankWorker(ws, {"activation-checkpointing", engine, lora, policy});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

// lora_separate: each adapter its own unit inside the recomputed layer, gathered again there.
INSTANTIATE_TEST_SUITE_P(
    Engines, ActivationCheckpointing,
    ::testing::Values(std::make_tuple(2, "reference", "full", "transformer_block"),
                      std::make_tuple(1, "flat", "full", "transformer_block"),
                      std::make_tuple(2, "flat", "lora", "transformer_block"),
                      std::make_tuple(3, "flat", "full", "transformer_block"),
                      std::make_tuple(1, "per_param", "lora", "transformer_block"),
                      std::make_tuple(2, "per_param", "full", "transformer_block"),
                      std::make_tuple(3, "per_param", "lora", "transformer_block"),
                      std::make_tuple(2, "flat", "lora", "lora_separate"),
                      std::make_tuple(3, "per_param", "lora", "lora_separate")));

}  // namespace
}  // namespace shardbench
