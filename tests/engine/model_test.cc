// The Llama model: names, shapes, parameter counts, determinism, LoRA at init, checkpoint
// save/load through a Hugging Face directory, rotary buffer, and bad checkpoints.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/model/hf_weights.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

using model::LlamaForCausalLM;
using model::LoraConfig;

std::unique_ptr<LlamaForCausalLM> Tiny(uint64_t seed, LoraConfig lora = {}) {
  return model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), lora, seed, at::TensorOptions());
}

at::Tensor SomeIds(int64_t b = 2, int64_t t = 16) {
  return model::SyntheticData(7, 256, t).batch(0, 0, b).input_ids;
}

LoraConfig Lora(std::vector<std::string> targets = {"q_proj", "v_proj"}) {
  LoraConfig l;
  l.enabled = true;
  l.r = 4;
  l.alpha = 8;
  l.targets = std::move(targets);
  return l;
}

TEST(LlamaModel, HuggingFaceNamesAndShapes) {
  auto m = Tiny(1);
  auto params = m->named_parameters();
  const auto c = m->config();
  ASSERT_EQ(params.size(), 2 + 9 * c.num_hidden_layers + 1u);
  EXPECT_EQ(params.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(params[1].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(params[8].name, "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(params[9].name, "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(params[params.size() - 2].name, "model.norm.weight");
  EXPECT_EQ(params.back().name, "lm_head.weight");
  EXPECT_EQ(m->model.layers[0]->self_attn.k_proj.weight.sizes(), (at::IntArrayRef{32, 64}));  // GQA: 2 kv heads x 16
  EXPECT_EQ(model::CountParameters(*m, false), c.parameter_count());
  auto buffers = m->named_buffers();
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(buffers[0].name, "model.rotary_emb.inv_freq");
  at::Tensor logits = m->forward(SomeIds(3, 10));
  EXPECT_EQ(logits.sizes(), (at::IntArrayRef{3, 10, 256}));
}

TEST(LlamaModel, NamedConfigsHaveTheirRealParameterCounts) {
  // Published sizes: Llama-2-7B 6,738,415,616; Llama-3-8B 8,030,261,248; Llama-2-70B 68,976,648,192.
  EXPECT_EQ(model::NamedLlamaConfig("llama2-7b").parameter_count(), 6738415616);
  EXPECT_EQ(model::NamedLlamaConfig("llama3-8b").parameter_count(), 8030261248);
  EXPECT_EQ(model::NamedLlamaConfig("llama2-70b").parameter_count(), 68976648192);
  EXPECT_EQ(model::NamedLlamaConfig("1b").parameter_count(), 1100048384);  // TinyLlama-1.1B
  EXPECT_THROW(model::NamedLlamaConfig("gpt5"), InputError);
}

TEST(LlamaModel, SameSeedSameWeightsAndOutputs) {
  auto a = Tiny(5), b = Tiny(5), c = Tiny(6);
  auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
  bool any_differs = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(at::equal(*pa[i].slot, *pb[i].slot)) << pa[i].name;
    any_differs |= !at::equal(*pa[i].slot, *pc[i].slot);
  }
  EXPECT_TRUE(any_differs);
  at::Tensor ids = SomeIds();
  EXPECT_TRUE(at::equal(a->forward(ids), b->forward(ids)));
}

TEST(LlamaModel, LoraAtInitEqualsBaseExactly) {
  auto base = Tiny(9);
  auto lora = Tiny(9, Lora({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
  at::Tensor ids = SomeIds();
  EXPECT_TRUE(at::equal(base->forward(ids), lora->forward(ids)));
}

TEST(LlamaModel, LoraFreezesBaseAndTrainsOnlyAdapters) {
  auto m = Tiny(3, Lora());
  const auto c = m->config();
  int64_t trainable = 0;
  for (auto& p : m->named_parameters()) {
    const bool is_adapter = p.name.find(".lora_A.") != std::string::npos || p.name.find(".lora_B.") != std::string::npos;
    EXPECT_EQ(p.slot->requires_grad(), is_adapter) << p.name;
    if (p.slot->requires_grad()) trainable += p.slot->numel();
  }
  // q_proj: A [4, 64], B [64, 4]; v_proj: A [4, 64], B [32, 4]; per layer.
  EXPECT_EQ(trainable, c.num_hidden_layers * (4 * 64 + 64 * 4 + 4 * 64 + 32 * 4));
  EXPECT_EQ(m->model.layers[0]->self_attn.q_proj.lora_scaling, 2.0);
  EXPECT_EQ(m->named_parameters()[2].name, "model.layers.0.self_attn.q_proj.lora_A.weight");
  EXPECT_TRUE(at::equal(m->model.layers[1]->self_attn.v_proj.lora_B->weight, at::zeros({32, 4})));
}

TEST(LlamaModel, BadLoraTargetIsNamed) {
  LoraConfig l = Lora({"q_proj", "qkv"});
  try {
    Tiny(1, l);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'qkv' is not a projection"), std::string::npos) << e.what();
  }
}

TEST(LlamaModel, RotaryBufferIsHfFormula) {
  auto m = Tiny(1);
  const auto c = m->config();
  at::Tensor want = 1.0 / at::pow(c.rope_theta, at::arange(0, c.head_dim(), 2, at::kLong).to(at::kFloat) / c.head_dim());
  EXPECT_TRUE(at::equal(m->model.rotary_emb.inv_freq, want));
}

class HfDirectory : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("hfdir"); }
  // Saves `m` the way transformers' save_pretrained lays it out.
  void Save(LlamaForCausalLM& m, const std::vector<std::string>& skip = {}) {
    model::WriteHfLlamaConfig(m.config(), dir_ + "/config.json");
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (auto& p : m.named_parameters()) {
      if (std::find(skip.begin(), skip.end(), p.name) == skip.end()) tensors.push_back({p.name, *p.slot});
    }
    checkpoint::WriteSafetensors(dir_ + "/model.safetensors", tensors);
  }
  std::string dir_;
};

TEST_F(HfDirectory, SaveLoadRoundtripIsExact) {
  auto m = Tiny(11);
  Save(*m);
  model::LoadReport report;
  auto loaded = model::BuildLlamaFromSource(dir_, {}, /*seed=*/999, at::TensorOptions(), &report);
  auto pa = m->named_parameters(), pb = loaded->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(at::equal(*pa[i].slot, *pb[i].slot)) << pa[i].name;
  EXPECT_EQ(report.tensors_loaded, static_cast<int64_t>(pa.size()));
  EXPECT_EQ(report.bytes_read, model::CountParameters(*m, false) * 4);
  at::Tensor ids = SomeIds();
  EXPECT_TRUE(at::equal(m->forward(ids), loaded->forward(ids)));
}

TEST_F(HfDirectory, MissingTensorIsNamed) {
  auto m = Tiny(11);
  Save(*m, {"model.layers.1.mlp.up_proj.weight"});
  try {
    model::BuildLlamaFromSource(dir_, {}, 1, at::TensorOptions());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lacks model parameters: model.layers.1.mlp.up_proj.weight"), std::string::npos)
        << e.what();
  }
}

TEST_F(HfDirectory, TruncatedCheckpointIsRejected) {
  auto m = Tiny(11);
  Save(*m);
  const std::string file = dir_ + "/model.safetensors";
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 100);
  try {
    model::BuildLlamaFromSource(dir_, {}, 1, at::TensorOptions());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST_F(HfDirectory, NonLlamaConfigIsRejected) {
  std::ofstream(dir_ + "/config.json") << R"({"model_type": "gpt2", "vocab_size": 10})";
  try {
    model::BuildLlamaFromSource(dir_, {}, 1, at::TensorOptions());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model_type 'gpt2' is not supported"), std::string::npos) << e.what();
  }
}

TEST(SyntheticData, IndependentOfHowTheBatchIsSplit) {
  model::SyntheticData data(42, 256, 32);
  auto whole = data.batch(3, 0, 4);
  auto first = data.batch(3, 0, 2), second = data.batch(3, 2, 2);
  EXPECT_TRUE(at::equal(whole.input_ids, at::cat({first.input_ids, second.input_ids})));
  EXPECT_TRUE(at::equal(whole.labels, at::cat({first.labels, second.labels})));
  // Labels are the next tokens.
  EXPECT_TRUE(at::equal(whole.labels.narrow(1, 0, 31), whole.input_ids.narrow(1, 1, 31)));
  EXPECT_FALSE(at::equal(data.batch(4, 0, 4).input_ids, whole.input_ids));
  EXPECT_EQ(whole.input_ids.scalar_type(), at::kLong);
  EXPECT_LT(whole.input_ids.max().item<int64_t>(), 256);
}

// libtorch exports its own std::filesystem whose remove_all crashes on non-empty directories;
// the link order must bind ours to libstdc++ (engine/CMakeLists.txt).
TEST(Toolchain, FilesystemRemoveAllWorksNextToLibtorch) {
  const std::string dir = testing::MakeTempDir("fs_remove_all");
  std::filesystem::create_directories(dir + "/a/b");
  std::ofstream(dir + "/a/b/file") << "x";
  EXPECT_EQ(std::filesystem::remove_all(dir + "/a"), 3u);
}

}  // namespace
}  // namespace shardbench
