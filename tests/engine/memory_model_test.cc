// The analytical memory model against the engine's own layout: parameter shards, gradient
// shards and optimizer-state bytes predicted from shapes equal what the engine builds.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "engine/comm/communicator.h"
#include "engine/memory/memory_model.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/shard/per_param_sharded_model.h"
#include "tests/support/layout_only_comm.h"

namespace shardbench {
namespace {

using testing::LayoutOnlyComm;

struct Case {
  const char* policy;
  bool orig, lora;
  int world, rank;
};

// The memory model's prediction for one case's rank under `engine`.
memory::MemoryPrediction Predict(const Case& c, const std::string& engine) {
  memory::MemoryModelInput in;
  in.config = model::NamedLlamaConfig("tiny");
  in.lora.enabled = c.lora;
  in.engine = shard::ParseEngineKind(engine, "engine");
  in.policy = shard::ParseWrapPolicy(c.policy, 20000);
  in.use_orig_params = c.orig;
  in.world_size = c.world;
  in.rank = c.rank;
  return memory::PredictMemory(in);
}

// AdamW keeps two fp32 tensors per trainable element this rank optimizes.
int64_t OptimizerBytes(const std::vector<model::NamedTensor>& params) {
  int64_t n = 0;
  for (const auto& p : params) {
    if (p.slot->requires_grad()) n += 2 * p.slot->nbytes();
  }
  return n;
}

class MemoryModelMatchesEngine : public ::testing::TestWithParam<Case> {};

TEST_P(MemoryModelMatchesEngine, ShardsGradsAndOptimizerState) {
  const Case c = GetParam();
  model::LoraConfig lora;
  lora.enabled = c.lora;
  const auto config = model::NamedLlamaConfig("tiny");
  auto m = model::BuildInitializedLlama(config, lora, 1, at::TensorOptions());
  LayoutOnlyComm comm(c.rank, c.world);
  shard::FlatShardedModel sharded(*m, &comm, {shard::ParseWrapPolicy(c.policy, 20000), c.orig, true});

  int64_t shards = 0, grad_shards = 0;
  for (const auto& u : sharded.units()) {
    shards += u->sharded_param_bytes();
    if (u->requires_grad()) grad_shards += u->sharded_param_bytes();
  }
  const auto p = Predict(c, "flat");
  EXPECT_EQ(p.bytes.held[memory::Category::kParamsSharded], shards);
  EXPECT_EQ(p.bytes.held[memory::Category::kGrads], grad_shards);
  EXPECT_EQ(p.bytes.held[memory::Category::kOptimState], OptimizerBytes(sharded.named_parameters()));
  EXPECT_EQ(p.units, static_cast<int64_t>(sharded.units().size()));
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, MemoryModelMatchesEngine,
    ::testing::Values(Case{"transformer_block", true, true, 2, 0}, Case{"transformer_block", true, true, 3, 2},
                      Case{"lora_separate", true, true, 3, 1}, Case{"lora_separate", false, true, 2, 1},
                      Case{"size", true, false, 3, 0}, Case{"none", false, false, 2, 1},
                      Case{"transformer_block", false, false, 3, 1}));

class MemoryModelMatchesPerParamEngine : public ::testing::TestWithParam<Case> {};

// The per-parameter engine's shards (padded rows), the optimizer state of its real rows, and
// the gradient bytes a step leaves (trainable params only, padded: exact in the multi-process
// tests), all from shapes alone.
TEST_P(MemoryModelMatchesPerParamEngine, ShardsAndOptimizerState) {
  const Case c = GetParam();
  model::LoraConfig lora;
  lora.enabled = c.lora;
  const auto config = model::NamedLlamaConfig("tiny");
  auto m = model::BuildInitializedLlama(config, lora, 1, at::TensorOptions());
  LayoutOnlyComm comm(c.rank, c.world);
  shard::PerParamShardedModel sharded(*m, &comm, {shard::ParseWrapPolicy(c.policy, 20000), true});
  int64_t shards = 0, trainable_padded = 0;
  for (const auto& u : sharded.units()) {
    shards += u->sharded_param_bytes();
    trainable_padded += u->reduce_numel() * 4;
  }
  const auto p = Predict(c, "per_param");
  EXPECT_EQ(p.bytes.held[memory::Category::kParamsSharded], shards);
  EXPECT_EQ(p.bytes.held[memory::Category::kOptimState], OptimizerBytes(sharded.named_parameters()));
  EXPECT_EQ(p.bytes.held[memory::Category::kGrads], trainable_padded);
  EXPECT_EQ(p.units, static_cast<int64_t>(sharded.units().size()));
}

INSTANTIATE_TEST_SUITE_P(Layouts, MemoryModelMatchesPerParamEngine,
                         ::testing::Values(Case{"transformer_block", true, true, 2, 0},
                                           Case{"transformer_block", true, true, 3, 2},
                                           Case{"lora_separate", true, true, 3, 1}, Case{"none", true, false, 2, 1},
                                           Case{"transformer_block", true, false, 3, 2}));

TEST(MemoryModel, PlansLlama2_70BWithoutAllocating) {
  memory::MemoryModelInput in;
  in.config = model::NamedLlamaConfig("llama2-70b");
  in.lora.enabled = true;
  in.engine = shard::EngineKind::kFlat;
  in.world_size = 8;
  const auto p = memory::PredictMemory(in);
  // Every parameter, frozen or not, sits in some unit's shard: 68,976,648,192 base params
  // plus r=8 adapters on q_proj (8192 -> 8192) and v_proj (8192 -> 1024) in 80 layers, padded
  // by at most 16 bytes per param for alignment and one element per unit for world size.
  const int64_t params = 68976648192LL + 80 * (8 * (8192 + 8192) + 8 * (8192 + 1024));
  EXPECT_GE(p.bytes.held[memory::Category::kParamsSharded], params * 4 / 8);
  EXPECT_LT(p.bytes.held[memory::Category::kParamsSharded], params * 4 / 8 + (80 * 13 + 3) * 16);
  // transformer_block puts frozen base weights and adapters together: gradients cover the
  // layers' whole shards, not just the adapters (the blowup, planned).
  EXPECT_GT(p.bytes.held[memory::Category::kGrads], 100 * p.bytes.held[memory::Category::kOptimState]);
}

}  // namespace
}  // namespace shardbench
