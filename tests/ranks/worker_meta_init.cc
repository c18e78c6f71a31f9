// Rank-worker commands for meta-device initialisation: a model built on the meta device and
// materialised shard by shard equals the eagerly initialised one bit for bit (and trains the
// same), from the modules' own init or from a checkpoint, each rank reading only its part.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/model/hf_weights.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/sharded_model.h"
#include "engine/train/trainer.h"
#include "tests/ranks/worker_checks.h"
#include "tests/ranks/worker_parity.h"

namespace shardbench::worker {
namespace {

struct Sharded {
  std::unique_ptr<model::LlamaForCausalLM> model;
  std::unique_ptr<shard::ShardedModel> engine;

  Sharded(std::unique_ptr<model::LlamaForCausalLM> m, const std::string& engine_name, comm::Communicator* comm,
          model::Materialization materialize)
      : model(std::move(m)) {
    shard::EngineOptions o;
    o.kind = shard::ParseEngineKind(engine_name, "engine");
    o.policy = Policy("transformer_block");
    o.materialize = materialize;
    engine = shard::MakeShardedModel(*model, comm, o);
    model::MaterializeBuffers(*model, at::Device(at::kCPU));
  }
  std::vector<std::pair<std::string, at::Tensor>> full() {
    if (engine->kind() != shard::EngineKind::kReference) return engine->gather_full_params();
    std::vector<std::pair<std::string, at::Tensor>> out;  // copies: the reference's own tensors keep training
    for (auto& p : model->named_parameters()) out.push_back({p.name, p.slot->detach().clone()});
    return out;
  }
  std::vector<model::NamedTensor> params() { return engine->named_parameters(); }
  train::GradientSync& sync() { return *engine; }
};

void ExpectSame(const std::string& tag, Sharded& a, Sharded& b, comm::Communicator* comm) {
  auto fa = a.full(), fb = b.full();
  Expect(fa.size() == fb.size(), tag + " parameter count");
  for (size_t i = 0; i < fa.size() && i < fb.size(); ++i) {
    Expect(fa[i].first == fb[i].first && at::equal(fa[i].second, fb[i].second), tag + " '" + fa[i].first + "' differs");
  }
  for (auto& buf : b.model->named_buffers()) {
    Expect(!at::isnan(*buf.slot).any().item<bool>(), tag + " buffer '" + buf.name + "' still holds NaN");
  }
  // The same losses over a few steps: buffers (RoPE) and parameters agree in use, too.
  optim::AdamW oa(optim::MakeParamGroups(a.params(), kLr, kWeightDecay, true));
  optim::AdamW ob(optim::MakeParamGroups(b.params(), kLr, kWeightDecay, true));
  Expect(TrainSharded(*a.model, a.sync(), oa, comm) == TrainSharded(*b.model, b.sync(), ob, comm),
         tag + " losses differ");
}

}  // namespace

// meta-init ENGINE [CHECKPOINT_DIR]: eager vs meta, from init or from a checkpoint.
int MetaInitCheck(const std::string& engine, const std::string& checkpoint_dir) {
  auto comm = ConnectFromEnv();
  const bool lora = true;
  const auto config = model::NamedLlamaConfig("tiny");
  const std::string tag = "[" + engine + " meta init" + (checkpoint_dir.empty() ? "" : " from checkpoint") + "]";
  auto meta_model = [&] { return std::make_unique<model::LlamaForCausalLM>(config, LoraFor(lora), at::TensorOptions().device(at::kMeta)); };
  if (checkpoint_dir.empty()) {
    Sharded eager(Build(lora), engine, comm.get(), {});
    auto m = meta_model();
    auto fill = model::InitMaterializer(*m, 17);
    Sharded meta(std::move(m), engine, comm.get(), {fill, at::Device(at::kCPU)});
    ExpectSame(tag, eager, meta, comm.get());
  } else {
    auto eager_model = model::BuildLlamaFromSource(checkpoint_dir, LoraFor(lora), 17, at::TensorOptions());
    Sharded eager(std::move(eager_model), engine, comm.get(), {});
    auto ckpt = std::make_shared<const checkpoint::HfCheckpoint>(checkpoint::HfCheckpoint::Open(checkpoint_dir));
    auto report = std::make_shared<model::LoadReport>();
    auto m = meta_model();
    auto fill = model::CheckpointMaterializer(ckpt, model::InitMaterializer(*m, 17), report);
    Sharded meta(std::move(m), engine, comm.get(), {fill, at::Device(at::kCPU)});
    // Exactly the base elements this rank holds were read (the whole file only for the
    // unsharded engine, whose every rank holds everything).
    int64_t local_base = 0;
    for (auto& p : meta.params()) {
      if (p.name.find(".lora_") == std::string::npos) local_base += p.slot->numel() * 4;
    }
    Expect(report->bytes_read == local_base,
           tag + " read " + std::to_string(report->bytes_read) + " bytes, this rank holds " + std::to_string(local_base) +
               " base bytes (file: " + std::to_string(ckpt->total_bytes()) + ")");
    if (engine == "reference") Expect(local_base == static_cast<int64_t>(ckpt->total_bytes()), tag + " reference holds all");
    ExpectSame(tag, eager, meta, comm.get());
  }
  if (comm) comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker
