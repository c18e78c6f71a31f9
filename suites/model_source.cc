#include "suites/model_source.h"

#include <filesystem>

#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/memory/tracking_allocator.h"

namespace shardbench {

BuiltModel BuildScenarioModel(const Scenario& s, uint64_t seed, const at::Device& device) {
  BuiltModel b;
  const bool from_dir = std::filesystem::is_directory(s.model);
  if (s.init == "eager") {
    memory::ScopedCategory whole_model(memory::Category::kParamsUnsharded);
    b.model = model::BuildLlamaFromSource(s.model, s.lora, seed, at::TensorOptions().device(device), b.load.get());
    return b;
  }
  const model::LlamaConfig config = from_dir ? model::LoadHfLlamaConfig((std::filesystem::path(s.model) / "config.json").string())
                                             : model::NamedLlamaConfig(s.model);
  b.model = std::make_unique<model::LlamaForCausalLM>(config, s.lora, at::TensorOptions().device(at::kMeta));
  model::ParamMaterializer init = model::InitMaterializer(*b.model, seed);
  if (from_dir) {
    auto ckpt = std::make_shared<const checkpoint::HfCheckpoint>(checkpoint::HfCheckpoint::Open(s.model));
    b.materialize.fill = model::CheckpointMaterializer(ckpt, init, b.load);
  } else {
    b.materialize.fill = init;
  }
  b.materialize.device = device;
  return b;
}

}  // namespace shardbench
