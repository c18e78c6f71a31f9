// Loads a Hugging Face checkpoint directory into a LlamaForCausalLM: every base parameter by
// its HF name; LoRA adapters when the directory holds them (a full state dict of a LoRA model),
// otherwise they keep their own init (a base checkpoint).
#pragma once

#include <string>

#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/model/llama.h"

namespace shardbench::model {

struct LoadReport {
  int64_t tensors_loaded = 0;
  int64_t bytes_read = 0;          // checkpoint bytes this process copied
  double seconds = 0;              // reading and copying them (0 for a named config)
  std::vector<std::string> unexpected;  // in the checkpoint, not in the model (ignored)
};

// A missing base parameter or a shape mismatch is an InputError naming the directory and the
// tensor; values are converted to the parameter's dtype.
LoadReport LoadHfWeights(LlamaForCausalLM& model, const checkpoint::HfCheckpoint& ckpt);

// Meta-device init from a checkpoint: each call copies only the requested elements of the
// named tensor out of the mapped file (a rank reads just its own rows/ranges); parameters the
// checkpoint does not hold and that may be missing (LoRA adapters) come from `fallback`.
// `report` (shared, may be read after the engine is built) counts tensors, bytes and seconds.
// A missing base parameter or a size mismatch is an InputError naming the directory and tensor.
ParamMaterializer CheckpointMaterializer(std::shared_ptr<const checkpoint::HfCheckpoint> ckpt, ParamMaterializer fallback,
                                         std::shared_ptr<LoadReport> report);

// The named config or, for a directory, its config.json; `lora` applied, weights loaded or
// initialised from `seed`.
std::unique_ptr<LlamaForCausalLM> BuildLlamaFromSource(const std::string& model_source, const LoraConfig& lora,
                                                       uint64_t seed, const at::TensorOptions& options,
                                                       LoadReport* report = nullptr);

}  // namespace shardbench::model
