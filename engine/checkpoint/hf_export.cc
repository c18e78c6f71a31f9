#include "engine/checkpoint/hf_export.h"

#include <ATen/ATen.h>

#include <filesystem>

#include "engine/checkpoint/safetensors.h"
#include "engine/common/durable_file.h"

namespace shardbench::checkpoint {

nlohmann::json PeftAdapterConfig(const model::LoraConfig& lora) {
  return {{"peft_type", "LORA"},      {"task_type", "CAUSAL_LM"},  {"r", lora.r},
          {"lora_alpha", lora.alpha}, {"lora_dropout", 0.0},       {"target_modules", lora.targets},
          {"bias", "none"},           {"fan_in_fan_out", false},   {"inference_mode", true},
          {"use_rslora", false},      {"init_lora_weights", true}, {"modules_to_save", nullptr}};
}

void ExportHfModel(model::LlamaForCausalLM& m, const std::string& dir) {
  std::vector<std::pair<std::string, at::Tensor>> base, adapters;
  for (auto& p : m.named_parameters()) {
    at::Tensor t = p.slot->detach().cpu().contiguous();
    if (p.name.find(".lora_") != std::string::npos) {
      adapters.push_back({"base_model.model." + p.name, t});  // PEFT's saved names
    } else {
      base.push_back({p.name, t});
    }
  }
  std::filesystem::create_directories(dir + "/model");
  model::WriteHfLlamaConfig(m.config(), dir + "/model/config.json");
  WriteSafetensors(dir + "/model/model.safetensors", base, {{"format", "pt"}});
  if (!adapters.empty()) {
    std::filesystem::create_directories(dir + "/adapter");
    WriteFileAtomically(dir + "/adapter/adapter_config.json", PeftAdapterConfig(m.lora()).dump(2) + "\n");
    WriteSafetensors(dir + "/adapter/adapter_model.safetensors", adapters, {{"format", "pt"}});
  }
}

}  // namespace shardbench::checkpoint
