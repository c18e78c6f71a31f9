// Meta-device initialisation against eager initialisation, across processes and engines.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstring>

#include "engine/checkpoint/safetensors.h"
#include "engine/model/llama.h"
#include "engine/model/param_init.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

constexpr uint64_t kPinned125mInitHash = 8071253736329442699ull;

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

TEST(ParamInit, VectorisedNormalsEqualTheScalarDefinitionBitForBit) {
  // Blocks, ranges starting anywhere, std 1 (the most float ties) and the usual 0.02.
  for (const model::ParamInit init : {model::ParamInit{model::ParamInit::Kind::kNormal, 0.0, 0.02},
                                      model::ParamInit{model::ParamInit::Kind::kNormal, 0.5, 1.0}}) {
    for (const int64_t begin : {int64_t{0}, int64_t{12345}, (int64_t{1} << 33) + 7}) {
      at::Tensor got = at::empty({1 << 20});
      model::FillInitRange(got, init, 0x5eed, begin);
      const float* g = got.data_ptr<float>();
      int64_t differ = 0;
      for (int64_t j = 0; j < got.numel(); ++j) {
        const float want = model::NormalElement(init, 0x5eed, static_cast<uint64_t>(begin + j));
        differ += std::memcmp(&want, g + j, sizeof(float)) != 0;
      }
      EXPECT_EQ(differ, 0) << "std " << init.b << ", from element " << begin;
    }
  }
  // Another dtype goes through a float copy: the same values, rounded once.
  at::Tensor f32 = at::empty({4096}), bf16 = at::empty({4096}, at::kBFloat16);
  const model::ParamInit normal{model::ParamInit::Kind::kNormal, 0.0, 0.02};
  model::FillInitRange(f32, normal, 7, 100);
  model::FillInitRange(bf16, normal, 7, 100);
  EXPECT_TRUE(at::equal(bf16, f32.to(at::kBFloat16)));
}

// FNV-1a over every parameter's bytes, in name order.
uint64_t HashParameters(model::Module& m) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (auto& p : m.named_parameters()) {
    const at::Tensor t = p.slot->contiguous();
    const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
    for (size_t i = 0; i < t.nbytes(); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  }
  return h;
}

TEST(ParamInit, The125mInitIsPinned) {
  // The 125m model's eager initialisation (seed 1234, LoRA on every projection), hashed when the
  // generator computed one element at a time: the vectorised generator must not change a bit.
  model::LoraConfig lora;
  lora.enabled = true;
  lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  auto m = model::BuildInitializedLlama(model::NamedLlamaConfig("125m"), lora, 1234, at::TensorOptions());
  EXPECT_EQ(HashParameters(*m), kPinned125mInitHash);
}

// Every normal element of the 125m model against the scalar definition (~9 s at one element a
// time): how kPinned125mInitHash was checked to be today's init, and how each faster generator
// was checked against it. Disabled in the suite because it is slow and the hash above pins the
// same bits; run with --gtest_also_run_disabled_tests.
TEST(ParamInit, DISABLED_Every125mNormalElementEqualsTheScalarDefinition) {
  model::LoraConfig lora;
  lora.enabled = true;
  lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  auto m = model::BuildInitializedLlama(model::NamedLlamaConfig("125m"), lora, 1234, at::TensorOptions());
  const auto inits = model::CollectParamInits(*m);
  int64_t checked = 0;
  for (auto& p : m->named_parameters()) {
    const model::ParamInit& init = inits.at(p.name);
    if (init.kind != model::ParamInit::Kind::kNormal) continue;
    const at::Tensor t = p.slot->contiguous();
    const float* v = t.data_ptr<float>();
    const uint64_t key = model::SeedFor(1234, p.name);
    int64_t differ = 0;
    for (int64_t j = 0; j < t.numel(); ++j) {
      const float want = model::NormalElement(init, key, static_cast<uint64_t>(j));
      differ += std::memcmp(&want, v + j, sizeof(float)) != 0;
    }
    EXPECT_EQ(differ, 0) << p.name;
    checked += t.numel();
  }
  EXPECT_GT(checked, 100'000'000);
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
