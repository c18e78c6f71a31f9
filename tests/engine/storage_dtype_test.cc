// Stored dtypes: frozen parameters keep the dtype they were loaded in, trainable ones become
// fp32 masters; the engines hold, gather and account for the mix exactly.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/memory/memory_model.h"
#include "engine/model/layers.h"
#include "engine/model/storage_dtype.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/shard/per_param_sharded_model.h"
#include "harness/model_source.h"
#include "harness/scenario/scenario_parser.h"
#include "tests/support/layout_only_comm.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

model::LoraConfig Lora() {
  model::LoraConfig lora;
  lora.enabled = true;
  return lora;
}

// A tiny base model (no adapters) written as an HF directory with bf16 tensors.
std::string WriteBf16Checkpoint(const std::string& name) {
  const std::string dir = testing::MakeTempDir(name);
  auto base = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), {}, 5, at::TensorOptions());
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (auto& p : base->named_parameters()) tensors.push_back({p.name, p.slot->detach().to(at::kBFloat16)});
  model::WriteHfLlamaConfig(base->config(), dir + "/config.json");
  checkpoint::WriteSafetensors(dir + "/model.safetensors", tensors);
  return dir;
}

TEST(StorageDtype, TrainableBecomeFp32FrozenKeepTheLoadedDtype) {
  const model::StoragePolicy bf16{at::kBFloat16, false}, automatic{std::nullopt, false}, upcast_all{at::kBFloat16, true};
  EXPECT_EQ(model::StorageDtype(bf16, /*trainable=*/false, std::nullopt), at::kBFloat16);
  EXPECT_EQ(model::StorageDtype(bf16, /*trainable=*/true, std::nullopt), at::kFloat);
  EXPECT_EQ(model::StorageDtype(automatic, false, at::kBFloat16), at::kBFloat16);
  EXPECT_EQ(model::StorageDtype(automatic, false, std::nullopt), at::kFloat);  // initialised: fp32
  EXPECT_EQ(model::StorageDtype(automatic, false, at::kHalf), at::kHalf);
  EXPECT_EQ(model::StorageDtype(upcast_all, false, at::kBFloat16), at::kFloat);
  EXPECT_EQ(model::LoadedDtype(upcast_all, std::nullopt), at::kBFloat16);
  // Unknown values never reach the engine: the scenario boundary refuses them.
  EXPECT_THROW(ParseScenario(YAML::Load("name: x"), "x.yaml", {"model_dtype=int8"}), InputError);
  EXPECT_THROW(ParseScenario(YAML::Load("name: x"), "x.yaml", {"upcast=frozen"}), InputError);
}

TEST(StorageDtype, AutoTakesEachCheckpointTensorsDtypeAndLoadsItExactly) {
  const std::string dir = WriteBf16Checkpoint("storage_auto");
  const auto ckpt = checkpoint::HfCheckpoint::Open(dir);
  for (const std::string init : {"eager", "meta"}) {
    Scenario s;
    s.model = dir;
    s.lora = Lora();
    s.init = init == "meta" ? Init::kMeta : Init::kEager;
    BuiltModel b = BuildScenarioModel(s, 1, at::Device(at::kCPU));
    if (init == "meta") model::MaterializeParameters(*b.model, b.materialize);
    int64_t frozen = 0;
    for (auto& p : b.model->named_parameters()) {
      const bool adapter = p.name.find(".lora_") != std::string::npos;
      EXPECT_EQ(p.slot->scalar_type(), adapter ? at::kFloat : at::kBFloat16) << init << " " << p.name;
      EXPECT_EQ(b.loaded.at(p.name).dtype, adapter ? at::kFloat : at::kBFloat16) << p.name;
      if (adapter) continue;
      ++frozen;
      EXPECT_TRUE(at::equal(*p.slot, ckpt.tensor(p.name))) << init << " " << p.name;
    }
    EXPECT_EQ(b.load->bytes_read, static_cast<int64_t>(ckpt.total_bytes())) << init;  // bf16 bytes, read once
    EXPECT_GT(frozen, 0);
  }
  // Asked for fp32: the same weights widened; upcast=all: fp32 held, bf16 as loaded.
  Scenario s;
  s.model = dir;
  s.lora = Lora();
  s.model_dtype = at::kFloat;
  for (auto& p : BuildScenarioModel(s, 1, at::Device(at::kCPU)).model->named_parameters()) {
    EXPECT_EQ(p.slot->scalar_type(), at::kFloat) << p.name;
  }
  s.model_dtype = std::nullopt;
  s.upcast = Upcast::kAll;
  BuiltModel up = BuildScenarioModel(s, 1, at::Device(at::kCPU));
  for (auto& p : up.model->named_parameters()) {
    EXPECT_EQ(p.slot->scalar_type(), at::kFloat) << p.name;
    if (p.name.find(".lora_") == std::string::npos) {
      EXPECT_EQ(up.loaded.at(p.name).dtype, at::kBFloat16) << p.name;
    }
  }
}

TEST(StorageDtype, LinearComputesInItsWeightsDtypeAndKeepsTheBaseOutputDtype) {
  model::Linear linear(8, 4, at::TensorOptions().dtype(at::kBFloat16), model::LinearInit::kNormal, 0.02);
  linear.weight = at::randn({4, 8}).to(at::kBFloat16);
  linear.add_lora(2, 4.0);
  linear.lora_A->weight = at::randn({2, 8});  // fp32 adapters over a bf16 base, as PEFT keeps them
  linear.lora_B->weight = at::randn({4, 2});
  const at::Tensor x = at::randn({3, 8}).to(at::kBFloat16);
  const at::Tensor y = linear.forward(x);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  const at::Tensor want =
      (at::linear(x, linear.weight) + at::linear(at::linear(x.to(at::kFloat), linear.lora_A->weight), linear.lora_B->weight) * 2.0)
          .to(at::kBFloat16);
  EXPECT_TRUE(at::equal(y, want));
}

using LayoutOnly = testing::LayoutOnlyComm;

std::unique_ptr<model::LlamaForCausalLM> StoredModel(const model::StoragePolicy& policy) {
  auto m = std::make_unique<model::LlamaForCausalLM>(model::NamedLlamaConfig("tiny"), Lora(), at::TensorOptions().device(at::kMeta));
  model::ApplyStorageDtypes(*m, policy, nullptr);
  model::MaterializeParameters(*m, {model::InitMaterializer(*m, 1), at::Device(at::kCPU)});
  return m;
}

memory::MemoryPrediction Predict(const std::string& engine, const std::string& policy, int world, int rank) {
  memory::MemoryModelInput in;
  in.config = model::NamedLlamaConfig("tiny");
  in.lora = Lora();
  in.engine = shard::ParseEngineKind(engine, "engine");
  in.policy = shard::ParseWrapPolicy(policy, 20000);
  in.world_size = world;
  in.rank = rank;
  in.storage = {at::kBFloat16, /*upcast_all=*/false};
  return memory::PredictMemory(in);
}

TEST(StorageDtype, MemoryModelMatchesTheEnginesBytesByStoredDtype) {
  for (auto [world, rank] : {std::pair{2, 1}, std::pair{3, 2}}) {
    LayoutOnly comm(rank, world);
    auto pm = StoredModel({at::kBFloat16, /*upcast_all=*/false});
    shard::PerParamShardedModel per_param(*pm, &comm, {shard::ParseWrapPolicy("transformer_block", 20000), true});
    const memory::MemoryRecord pb = per_param.memory();
    int64_t frozen_padded = 0;
    for (const auto& u : per_param.units()) {
      for (const auto& p : u->params()) {
        if (!p.requires_grad) frozen_padded += p.layout.padded_numel() * 2;
      }
    }
    EXPECT_EQ(Predict("per_param", "transformer_block", world, rank).bytes.held[memory::Category::kParamsSharded], pb.held[memory::Category::kParamsSharded]);
    EXPECT_EQ(pb.params_by_dtype.at(at::kBFloat16), frozen_padded);
    EXPECT_EQ(pb.params_by_dtype.at(at::kBFloat16) + pb.params_by_dtype.at(at::kFloat), pb.held[memory::Category::kParamsSharded]);

    auto fm = StoredModel({at::kBFloat16, /*upcast_all=*/false});
    shard::FlatShardedModel flat(*fm, &comm, {shard::ParseWrapPolicy("lora_separate", 20000), true, true});
    const memory::MemoryRecord fb = flat.memory();
    int64_t frozen_units = 0;
    for (const auto& u : flat.units()) {
      if (!u->requires_grad()) frozen_units += u->sharded_param_bytes();
    }
    EXPECT_EQ(Predict("flat", "lora_separate", world, rank).bytes.held[memory::Category::kParamsSharded], fb.held[memory::Category::kParamsSharded]);
    EXPECT_EQ(fb.params_by_dtype.at(at::kBFloat16), frozen_units);
  }
}

TEST(StorageDtype, FlatEngineRefusesTwoDtypesInOneUnitWithFsdp1sMessage) {
  auto m = StoredModel({at::kBFloat16, /*upcast_all=*/false});
  try {
    shard::FlatShardedModel flat(*m, nullptr, {shard::ParseWrapPolicy("transformer_block", 20000), true, true});
    FAIL() << "a unit of bf16 base weights and fp32 adapters was flattened";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Must flatten tensors with uniform dtype but got BFloat16 and Float"), std::string::npos) << what;
    EXPECT_NE(what.find("model.layers.0"), std::string::npos) << what;
    EXPECT_NE(what.find("lora_separate"), std::string::npos) << what;
  }
}

TEST(StorageDtype, PerParamEngineRefusesTrainableParamsOfTwoDtypesInOneUnit) {
  auto m = StoredModel({at::kBFloat16, /*upcast_all=*/false});
  // An adapter stored bf16 beside fp32 ones: one reduce-scatter cannot carry both.
  auto& a = m->model.layers[0]->self_attn.q_proj.lora_A->weight;
  a = a.detach().to(at::kBFloat16).requires_grad_(true);
  try {
    shard::PerParamShardedModel sharded(*m, nullptr, {shard::ParseWrapPolicy("transformer_block", 20000), true});
    FAIL() << "trainable params of two dtypes in one unit were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("uniform original parameter dtype"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardbench
