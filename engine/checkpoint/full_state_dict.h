// FULL state dict: every parameter with its original name and shape, gathered to rank 0 and
// written there as a Hugging Face checkpoint directory (config.json + model.safetensors) that
// transformers and BuildLlamaFromSource load. Collective: every rank calls it, one unit at a
// time is gathered, only rank 0 writes. The directory is written atomically (a temporary
// directory renamed into place), so a crash mid-save leaves any previous checkpoint intact.
#pragma once

#include <string>

#include "engine/comm/communicator.h"
#include "engine/model/llama.h"
#include "engine/shard/flat_sharded_model.h"

namespace shardbench::checkpoint {

struct SaveReport {
  int64_t tensors = 0;
  int64_t bytes = 0;  // tensor data written (rank 0)
};

// `flat` null: the model is unsharded (reference engine) and rank 0 writes its own tensors.
SaveReport SaveFullStateDict(model::LlamaForCausalLM& model, shard::FlatShardedModel* flat, comm::Communicator* comm,
                             const std::string& dir);

}  // namespace shardbench::checkpoint
