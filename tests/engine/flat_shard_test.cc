// The flat-parameter (FSDP1) engine: wrap policies, layout, the uniform-requires_grad error,
// and (across processes) parity with the unsharded reference and exact gradient bytes.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "engine/common/error.h"
#include "engine/model/llama.h"
#include "engine/shard/flat_sharded_model.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

std::unique_ptr<model::LlamaForCausalLM> Tiny(bool lora) {
  model::LoraConfig l;
  l.enabled = lora;
  return model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), l, 1, at::TensorOptions());
}

std::vector<std::string> UnitPaths(model::LlamaForCausalLM& m, const std::string& policy) {
  std::vector<std::string> paths;
  for (auto& u : shard::PlanUnits(m, shard::ParseWrapPolicy(policy, 20000))) paths.push_back(u.path);
  return paths;
}

TEST(WrapPolicy, UnitsInPostOrderWithRootLast) {
  auto m = Tiny(true);
  EXPECT_EQ(UnitPaths(*m, "transformer_block"), (std::vector<std::string>{"model.layers.0", "model.layers.1", ""}));
  EXPECT_EQ(UnitPaths(*m, "none"), (std::vector<std::string>{""}));
  const auto lora = UnitPaths(*m, "lora_separate");
  ASSERT_EQ(lora.size(), 2 * 4 + 2 + 1u);  // q/v adapters A and B per layer, layers, root
  EXPECT_EQ(lora[0], "model.layers.0.self_attn.q_proj.lora_A");
  EXPECT_EQ(lora[4], "model.layers.0");
  // size: any module reaching 20000 unwrapped params (MLP projections are 11264 each).
  const auto size = UnitPaths(*m, "size");
  EXPECT_EQ(size.front(), "model.layers.0.mlp");
  EXPECT_EQ(size.back(), "");
  // A small threshold would take LlamaModel (no forward of its own); it takes modules that run.
  for (const auto& path : UnitPaths(*m, "size")) EXPECT_NE(path, "model");
  EXPECT_THROW(shard::ParseWrapPolicy("everything"), InputError);
}

// PEFT's fsdp_auto_wrap_policy: with LoRA exactly lora_separate's units; without, every leaf
// whose weight trains (projections, norms, the embedding, lm_head) and the layers, whose own
// parameters then all sit in nested units (no unit is planned for them).
TEST(WrapPolicy, PeftWrapsTrainableLeavesAndLayers) {
  auto lora = Tiny(true);
  EXPECT_EQ(UnitPaths(*lora, "peft"), UnitPaths(*lora, "lora_separate"));
  auto full = Tiny(false);
  const auto units = UnitPaths(*full, "peft");
  EXPECT_EQ(units.front(), "model.embed_tokens");
  EXPECT_EQ(units[1], "model.layers.0.self_attn.q_proj");
  EXPECT_EQ(std::count(units.begin(), units.end(), "model.layers.0"), 0);
  EXPECT_EQ(std::count(units.begin(), units.end(), "model.layers.0.input_layernorm"), 1);
  EXPECT_EQ(std::count(units.begin(), units.end(), "lm_head"), 1);
  EXPECT_EQ(units.back(), "");
  for (auto& p : full->named_parameters()) p.slot->requires_grad_(false);  // nothing trains: layers only
  EXPECT_EQ(UnitPaths(*full, "peft"), UnitPaths(*full, "transformer_block"));
}

TEST(WrapPolicy, EveryParameterInExactlyOneUnit) {
  for (const char* policy : {"transformer_block", "lora_separate", "peft", "size", "none"}) {
    auto m = Tiny(true);
    std::vector<std::string> seen;
    for (auto& u : shard::PlanUnits(*m, shard::ParseWrapPolicy(policy, 20000))) {
      for (auto& p : u.params) seen.push_back(p.name);
    }
    std::vector<std::string> all;
    for (auto& p : m->named_parameters()) all.push_back(p.name);
    std::sort(seen.begin(), seen.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(seen, all) << policy;
  }
}

TEST(FlatParamUnit, MixedRequiresGradWithoutOrigParamsIsRefusedAndNamed) {
  auto m = Tiny(true);
  try {
    shard::FlatShardedModel sharded(*m, nullptr, {shard::ParseWrapPolicy("transformer_block"), false, true});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Must flatten tensors with uniform requires_grad when use_orig_params=False (unit 'model.layers.0': "
              "frozen 9 (model.layers.0.self_attn.q_proj.weight, model.layers.0.self_attn.k_proj.weight, "
              "model.layers.0.self_attn.v_proj.weight, ...); trainable 4 (model.layers.0.self_attn.q_proj.lora_A.weight, "
              "model.layers.0.self_attn.q_proj.lora_B.weight, model.layers.0.self_attn.v_proj.lora_A.weight, ...)). "
              "Use use_orig_params=true or a wrap policy that puts trainable params in their own units (lora_separate).");
  }
}

TEST(FlatParamUnit, FlatParamsReplaceOriginalsWithoutOrigParams) {
  auto m = Tiny(false);
  const int64_t layer_numel = model::CountParameters(*m->decoder_layers()[0], false);
  shard::FlatShardedModel sharded(*m, nullptr, {shard::ParseWrapPolicy("transformer_block"), false, true});
  auto params = sharded.named_parameters();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].name, "model.layers.0._flat_param");
  EXPECT_EQ(params[2].name, "_flat_param");
  // Unaligned and unpadded at ws=1: exactly the layer's parameter count.
  EXPECT_EQ(params[0].slot->numel(), layer_numel);
  EXPECT_EQ(m->decoder_layers()[0]->self_attn.q_proj.weight.numel(), 0);  // originals are gone from the module
}

TEST(FlatParamUnit, OrigParamsAreShardViewsAlignedTo16Bytes) {
  auto m = Tiny(false);
  at::Tensor* q = &m->decoder_layers()[0]->self_attn.q_proj.weight;
  const at::Tensor original_object = *q;
  shard::FlatShardedModel sharded(*m, nullptr, {shard::ParseWrapPolicy("transformer_block"), true, true});
  EXPECT_TRUE(q->is_same(original_object));  // the same parameter object an optimizer may hold
  EXPECT_EQ(q->dim(), 1);
  for (auto& u : sharded.units()) {
    for (auto& p : u->params()) EXPECT_EQ(p.offset % 4, 0) << p.name;
  }
  // World size 1 is NO_SHARD (as in PyTorch): the params stay full-shaped views of the shard
  // from forward until the end of backward, and no extra buffer is allocated.
  auto ids = at::randint(256, {1, 8}, at::kLong);
  m->loss(ids, ids).backward();
  EXPECT_EQ(q->dim(), 2);
  EXPECT_EQ(sharded.memory().held[memory::Category::kParamsUnsharded], 0);
  sharded.after_backward();
  EXPECT_EQ(q->dim(), 1);
  EXPECT_TRUE(original_object.grad().defined());
}

class FlatAcrossRanks : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(FlatAcrossRanks, MatchesUnshardedReference) {
  const auto [ws, policy] = GetParam();
  auto run = testing::RunRankWorker(ws, {"flat-parity", policy});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(WorldSizesAndPolicies, FlatAcrossRanks,
                         ::testing::Combine(::testing::Values(1, 2, 3),
                                            ::testing::Values("transformer_block", "lora_separate", "none", "size")));

// SHARD_GRAD_OP: parameters stay unsharded from forward to backward.
TEST(FlatAcrossRanksKeepingParams, MatchesUnshardedReference) {
  auto run = testing::RunRankWorker(2, {"flat-parity", "transformer_block", "keep"});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

// Gradient accumulation: two micro-batches per step accumulate into the shard gradients.
TEST(FlatAcrossRanksAccumulating, MatchesUnshardedReference) {
  auto run = testing::RunRankWorker(2, {"flat-parity", "transformer_block", "accumulate"});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

// Clipping by global norm: each rank's shard norms are all-reduced, so the clipped update
// equals the reference's (a small max norm keeps clipping active every step).
TEST(FlatAcrossRanksClipping, MatchesUnshardedReference) {
  auto run = testing::RunRankWorker(3, {"flat-parity", "lora_separate", "clip"});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

class FlatGradBytes : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(FlatGradBytes, ExactPerRank) {
  const auto [ws, policy] = GetParam();
  auto run = testing::RunRankWorker(ws, {"flat-grad-bytes", policy});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, FlatGradBytes,
                         ::testing::Combine(::testing::Values(2, 3),
                                            ::testing::Values("transformer_block", "lora_separate")));

class FlatUnshardedPeak : public ::testing::TestWithParam<std::string> {};

TEST_P(FlatUnshardedPeak, BuffersFreedWhenEachUnitsBackwardEnds) {
  auto run = testing::RunRankWorker(2, {"flat-unsharded-peak", GetParam()});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(Policies, FlatUnshardedPeak, ::testing::Values("transformer_block", "lora_separate"));

TEST(FlatOptimizerBeforeWrap, OrigParamsKeepGroupsAndTrainLikeReference) {
  auto run = testing::RunRankWorker(2, {"flat-optimizer-before-wrap", "orig"});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

TEST(FlatOptimizerBeforeWrap, WithoutOrigParamsNothingEverChanges) {
  auto run = testing::RunRankWorker(2, {"flat-optimizer-before-wrap", "flat"});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

}  // namespace
}  // namespace shardbench
