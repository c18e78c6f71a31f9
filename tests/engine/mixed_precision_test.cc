// bf16 mixed precision against fp32 on both sharding engines, at world sizes 1 and 2: the same
// engine and batches, losses finite and within 2% over 5 steps; bytes exact by dtype: unsharded
// params and all-gathers in bf16 (half the fp32 bytes), reduce-scatters in fp32 (the same
// bytes), sharded master params, gradients and optimizer state fp32. Every rank runs the body.
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "engine/optim/param_groups.h"
#include "engine/shard/sharded_model.h"
#include "tests/support/rank_test.h"
#include "tests/ranks/worker_parity.h"

namespace shardbench {
namespace {

// One 5-step training run of the tiny LoRA model, sharded by transformer block.
struct Outcome {
  std::vector<double> losses;
  comm::CommStats stats{};
  int64_t unsharded_peak = 0;
  std::vector<at::ScalarType> master_dtypes;  // every param, gradient and exp_avg the optimizer holds
};

Outcome Train(const std::string& engine, bool bf16, comm::Communicator* comm) {
  auto m = worker::Build(/*lora=*/true);
  shard::EngineOptions options;
  options.kind = shard::ParseEngineKind(engine, "engine");
  options.policy = worker::Policy("transformer_block");
  if (bf16) options.mixed_precision.param_dtype = at::kBFloat16, options.mixed_precision.reduce_dtype = at::kFloat;
  const std::unique_ptr<shard::ShardedModel> sharded = shard::MakeShardedModel(*m, comm, options);
  optim::AdamW opt(optim::MakeParamGroups(sharded->named_parameters(), worker::kLr, worker::kWeightDecay, true));
  if (comm) comm->reset_stats();
  Outcome o;
  o.losses = worker::TrainSharded(*m, *sharded, opt, comm);
  if (comm) o.stats = comm->stats();
  o.unsharded_peak = sharded->memory().peak[memory::Category::kParamsUnsharded];
  for (auto& p : sharded->named_parameters()) {
    o.master_dtypes.push_back(p.slot->scalar_type());
    if (p.slot->grad().defined()) o.master_dtypes.push_back(p.slot->grad().scalar_type());
  }
  for (auto& g : opt.groups()) {
    for (auto& p : g.params) {
      if (auto* s = opt.find_state(p); s && s->defined()) o.master_dtypes.push_back(s->exp_avg.scalar_type());
    }
  }
  return o;
}

class MixedPrecision : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(MixedPrecision, Bf16ComputeFp32MasterExactBytesByDtype) {
  const auto [world_size, engine] = GetParam();
  testing::RunOnRanks(world_size, [engine = engine](comm::Communicator* comm) {
    const Outcome fp32 = Train(engine, false, comm), bf16 = Train(engine, true, comm);
    for (size_t s = 0; s < fp32.losses.size(); ++s) {
      EXPECT_TRUE(std::isfinite(bf16.losses[s])) << "step " << s;
      EXPECT_NEAR(bf16.losses[s], fp32.losses[s], 0.02 * std::abs(fp32.losses[s])) << "step " << s;
    }
    EXPECT_NE(bf16.losses, fp32.losses) << "bf16 losses identical to fp32: nothing was cast";
    for (auto d : bf16.master_dtypes) EXPECT_EQ(d, at::kFloat) << "a master param, gradient or optimizer state";
    EXPECT_EQ(2 * bf16.unsharded_peak, fp32.unsharded_peak) << "the unsharded peak halves in bf16";
    if (!comm) return;
    const auto ag = size_t(comm::Collective::kAllGather), rs = size_t(comm::Collective::kReduceScatter);
    EXPECT_EQ(bf16.stats[ag].count, fp32.stats[ag].count);
    EXPECT_EQ(2 * bf16.stats[ag].bytes, fp32.stats[ag].bytes) << "all-gathers carry bf16";
    EXPECT_EQ(bf16.stats[rs].count, fp32.stats[rs].count);
    EXPECT_EQ(bf16.stats[rs].bytes, fp32.stats[rs].bytes) << "reduce-scatters stay fp32 (reduce_dtype)";
  });
}

INSTANTIATE_TEST_SUITE_P(Engines, MixedPrecision,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Values("flat", "per_param")));

}  // namespace
}  // namespace shardbench
