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
};

struct MemoryPrediction {
  int64_t params_sharded = 0;
  int64_t params_unsharded_peak = 0;
  int64_t grads = 0;
  int64_t optim_state = 0;
  int64_t activations = 0;  // estimate
  int64_t total() const { return params_sharded + params_unsharded_peak + grads + optim_state + activations; }
  int64_t units = 0;  // sharded units (0 for the reference)
};

MemoryPrediction PredictMemory(const MemoryModelInput& in);

}  // namespace shardbench::memory
