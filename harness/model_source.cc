#include "harness/model_source.h"

#include <chrono>
#include <filesystem>

#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/common/path_checks.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/storage_dtype.h"
#include "harness/scenario/scenario_model.h"

namespace shardbench {

model::StoragePolicy StoragePolicyFor(const Scenario& s) { return {s.model_dtype, s.upcast == Upcast::kAll}; }

BuiltModel BuildScenarioModel(const Scenario& s, uint64_t seed, const at::Device& device) {
  BuiltModel b;
  const bool from_dir = IsDirectory(s.model);
  const model::LlamaConfig config = ScenarioModelConfig(s);
  // Always declared on the meta device first: each parameter gets its storage dtype (frozen
  // ones as loaded, trainable ones fp32) before a byte of it exists.
  b.model = std::make_unique<model::LlamaForCausalLM>(config, s.lora, at::TensorOptions().device(at::kMeta));
  std::shared_ptr<const checkpoint::HfCheckpoint> ckpt;
  if (from_dir) {
    // Opening reads: it verifies every file's CRC-32 when the directory is one of our FULL
    // checkpoints (its manifest). That is checkpoint reading, reported as load, not construct.
    const auto t_open = std::chrono::steady_clock::now();
    ckpt = std::make_shared<const checkpoint::HfCheckpoint>(checkpoint::HfCheckpoint::Open(s.model));
    b.load->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_open).count();
  }
  const model::StoragePolicy policy = StoragePolicyFor(s);
  for (auto& p : b.model->named_parameters()) {
    std::optional<c10::ScalarType> from_file;
    if (ckpt && ckpt->contains(p.name)) from_file = ckpt->info(p.name).dtype;
    b.loaded[p.name] = {model::LoadedDtype(policy, from_file), p.slot->numel()};
  }
  model::ApplyStorageDtypes(*b.model, policy, ckpt.get());
  model::ParamMaterializer init = model::InitMaterializer(*b.model, seed);
  b.materialize.fill = ckpt ? model::CheckpointMaterializer(ckpt, init, b.load) : init;
  b.materialize.device = device;
  if (s.init == Init::kEager) {  // every rank: the whole model, then the engine shards it
    memory::ScopedCategory whole_model(memory::Category::kParamsUnsharded);
    model::MaterializeParameters(*b.model, b.materialize);
    model::MaterializeBuffers(*b.model, device);
    b.materialize = {};
  }
  return b;
}

}  // namespace shardbench
