// The dtype each parameter is stored in between steps, as a Hugging Face + PEFT + accelerate
// fine-tune stores it: the weights are loaded in `model_dtype` (from_pretrained's torch_dtype),
// trainable parameters are then upcast to fp32 masters (what the optimizer steps), and frozen
// ones keep the dtype they were loaded in. upcast=all reproduces accelerate's FSDP2 before
// accelerate#3848, which upcast every parameter, frozen base weights included (accelerate#3844:
// twice the parameter memory of a bf16 LoRA fine-tune).
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/model/module.h"

namespace shardbench::model {

struct StoragePolicy {
  // The dtype weights are loaded in; nullopt: auto (the checkpoint tensor's own dtype; fp32 otherwise).
  std::optional<c10::ScalarType> model_dtype;
  bool upcast_all = false;  // false: only trainable parameters become fp32 (upcast=trainable)
};

// The dtype a parameter is loaded in: `checkpoint_dtype` is the checkpoint tensor's, if the
// checkpoint holds it (a freshly initialised parameter is computed in fp32).
c10::ScalarType LoadedDtype(const StoragePolicy& policy, std::optional<c10::ScalarType> checkpoint_dtype);
// The dtype it is stored in: fp32 when trainable (or upcast=all), else as loaded.
c10::ScalarType StorageDtype(const StoragePolicy& policy, bool trainable, std::optional<c10::ScalarType> checkpoint_dtype);

// Gives every parameter of a model still on the meta device its storage dtype (nothing is
// allocated). `ckpt` (may be null) is where its weights will be read from.
void ApplyStorageDtypes(Module& meta_model, const StoragePolicy& policy, const checkpoint::HfCheckpoint* ckpt);

}  // namespace shardbench::model
