// The scenario's choices as types, parsed once at the scenario boundary (the field table,
// harness/scenario/scenario_fields.cc) and written back by name: the harness and the engines compare
// enums, never strings. Each enum's names are the values a scenario file takes.
#pragma once

#include <optional>
#include <string>

#include <c10/core/ScalarType.h>

#include "engine/shard/engine_kind.h"

namespace shardbench {

// Ours (reference, flat, per_param) or PyTorch's own through the Python peer (peers/torch_fsdp).
// Each has its spec in harness/scenario/engine_registry.h: its name and everything else.
enum class Engine { kReference, kFlat, kPerParam, kTorchFsdp1, kTorchFsdp2, kAccelerate, kTorchtune, kLast = kTorchtune };

// checkpoint.type: none, or one of the state dict kinds (engine/checkpoint/state_dict.h).
enum class CheckpointType { kNone, kFull, kSharded, kLocal, kAdapter };
const char* CheckpointTypeName(CheckpointType type);

// optimizer.build: from the wrapped model's parameters (the documented way), or from the
// original ones before wrapping (fine with use_orig_params=true; trains nothing without).
enum class OptimizerBuild { kAfterWrap, kBeforeWrap };
const char* OptimizerBuildName(OptimizerBuild build);

// data.source: a learnable synthetic pattern, or a flat file of token ids.
enum class DataSource { kSynthetic, kTokens };
const char* DataSourceName(DataSource source);

// upcast: fp32 masters for what trains (trainable), or for every parameter (all: accelerate's
// FSDP2 before #3848, which upcast the frozen base too).
enum class Upcast { kTrainable, kAll };
const char* UpcastName(Upcast upcast);

enum class Init { kEager, kMeta };
const char* InitName(Init init);

enum class Backend { kGloo, kNccl };
const char* BackendName(Backend backend);

// model_dtype: nullopt is "auto" (each checkpoint tensor's own dtype).
std::string ModelDtypeName(const std::optional<c10::ScalarType>& dtype);

}  // namespace shardbench
