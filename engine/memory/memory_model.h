// The analytical memory model: bytes per rank and category predicted from the scenario alone
// (shapes, LoRA, engine, wrap policy, world size, batch), with the model built on the meta
// device so any size (Llama-2-70B) is planned without allocating. Parameters, gradients and
// optimizer state are exact for our engines' layouts; activations are an estimate (see .cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/memory/memory_record.h"
#include "engine/model/llama.h"
#include "engine/model/storage_dtype.h"
#include "engine/shard/engine_kind.h"
#include "engine/shard/wrap_policy.h"

namespace shardbench::memory {

struct MemoryModelInput {
  model::LlamaConfig config;
  model::LoraConfig lora;
  shard::EngineKind engine = shard::EngineKind::kReference;
  shard::WrapPolicy policy;
  bool use_orig_params = true;
  bool reshard_after_forward = true;
  int world_size = 1;
  int rank = 0;
  int64_t batch_size = 1, seq_len = 1;  // per rank and micro-batch
  // Each parameter's stored dtype (trainable: fp32 masters, whose gradients and optimizer state
  // are fp32 too); `checkpoint` (may be null) gives model_dtype=auto its dtypes.
  model::StoragePolicy storage;
  std::shared_ptr<const checkpoint::HfCheckpoint> checkpoint;
  // Mixed precision: every param gathered (and activations computed) in param_dtype; unset,
  // each param is gathered in its stored dtype.
  std::optional<c10::ScalarType> param_dtype;
  // Each decoder layer recomputed in backward: it keeps only its input between forward and backward.
  bool activation_checkpointing = false;
};

// The memory record a rank will have: held params_sharded, grads and optim_state between steps;
// peak params_unsharded (gathered at once) and activations (an estimate).
struct MemoryPrediction {
  MemoryRecord bytes;
  int64_t units = 0;  // sharded units (0 for the reference)
  // Each unit's module path ("" for the root) and the parameters it holds, in post-order (root
  // last), as the engine plans them: `plan --json` lists them (tests compare PyTorch's units).
  std::vector<std::pair<std::string, std::vector<std::string>>> unit_params;
  // What the allocator's overall peak is predicted to be: the held categories and the peaks together.
  int64_t total() const;
};

MemoryPrediction PredictMemory(const MemoryModelInput& in);

}  // namespace shardbench::memory
