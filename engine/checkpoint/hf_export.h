// One process's whole model written the way Hugging Face reads it, with no collectives: the
// base model as a transformers directory (config.json + model.safetensors, every tensor in the
// dtype it is stored in) and, with LoRA, the adapters as a PEFT directory
// (adapter_config.json + adapter_model.safetensors). What a peer implementation loads to start
// from exactly our initial weights (peers/).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/model/llama.h"

namespace shardbench::checkpoint {

// PEFT's adapter_config.json for our LoRA (rank, alpha, targets; no dropout, no bias).
nlohmann::json PeftAdapterConfig(const model::LoraConfig& lora);

// Writes <dir>/model and, when the model has LoRA, <dir>/adapter. Each file atomically.
void ExportHfModel(model::LlamaForCausalLM& m, const std::string& dir);

}  // namespace shardbench::checkpoint
