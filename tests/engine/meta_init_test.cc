// Meta-device initialisation against eager initialisation, across processes and engines.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "engine/checkpoint/safetensors.h"
#include "engine/model/llama.h"
#include "engine/model/param_init.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

TEST(ParamInit, AnySliceEqualsTheSameElementsOfTheWhole) {
  const model::ParamInit normal{model::ParamInit::Kind::kNormal, 0.0, 0.02};
  at::Tensor whole = at::empty({1000});
  model::FillInitRange(whole, normal, 42, 0);
  at::Tensor part = at::empty({300});
  model::FillInitRange(part, normal, 42, 450);
  EXPECT_TRUE(at::equal(part, whole.narrow(0, 450, 300)));
  // The distribution asked for (1000 samples: loose statistical bounds).
  EXPECT_NEAR(whole.mean().item<double>(), 0.0, 0.004);
  EXPECT_NEAR(whole.std().item<double>(), 0.02, 0.003);
  // Another key, other values.
  at::Tensor other = at::empty({1000});
  model::FillInitRange(other, normal, 43, 0);
  EXPECT_FALSE(at::equal(other, whole));
}

TEST(MetaInit, EveryBufferIsRecomputedAfterMaterialising) {
  // Built on the meta device, every buffer is allocated as NaN and must be overwritten by its
  // module (rotary inv_freq: transformers#34234's uninitialised buffer).
  model::LlamaForCausalLM m(model::NamedLlamaConfig("tiny"), {}, at::TensorOptions().device(at::kMeta));
  model::MaterializeBuffers(m, at::Device(at::kCPU));
  auto eager = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), {}, 1, at::TensorOptions());
  auto mb = m.named_buffers(), eb = eager->named_buffers();
  ASSERT_EQ(mb.size(), eb.size());
  ASSERT_FALSE(mb.empty());
  for (size_t i = 0; i < mb.size(); ++i) {
    EXPECT_FALSE(at::isnan(*mb[i].slot).any().item<bool>()) << mb[i].name;
    EXPECT_TRUE(at::equal(*mb[i].slot, *eb[i].slot)) << mb[i].name;
  }
}

class MetaInitAcrossRanks : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(MetaInitAcrossRanks, EqualsEagerBitForBit) {
  const auto [ws, engine] = GetParam();
  auto run = testing::RunRankWorker(ws, {"meta-init", engine});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

TEST_P(MetaInitAcrossRanks, FromACheckpointEqualsEagerLoadReadingOnlyTheShard) {
  const auto [ws, engine] = GetParam();
  const std::string dir = testing::MakeTempDir("meta_ckpt_" + engine + std::to_string(ws));
  auto base = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), {}, 5, at::TensorOptions());
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (auto& p : base->named_parameters()) tensors.push_back({p.name, p.slot->detach()});
  model::WriteHfLlamaConfig(base->config(), dir + "/config.json");
  checkpoint::WriteSafetensors(dir + "/model.safetensors", tensors);
  auto run = testing::RunRankWorker(ws, {"meta-init", engine, dir});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(Engines, MetaInitAcrossRanks,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values("reference", "flat", "per_param")));

}  // namespace
}  // namespace shardbench
