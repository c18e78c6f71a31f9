// The frozen_dtype check (suites/catalog.yaml case 2): every frozen parameter is held in the dtype it was
// loaded in. A harness that upcasts the whole model for mixed precision (accelerate's FSDP2
// before #3848, accelerate#3844) doubles the memory of a bf16 base model's frozen weights
// without a single error; this check makes that red.
#pragma once

#include <map>
#include <string>

#include "engine/model/llama.h"
#include "reporters/run_result.h"
#include "harness/model_source.h"

namespace shardbench {

// `model`'s slots as the engine left them between steps (sharded or whole: their dtype is the
// stored one); `loaded`: each parameter's dtype as loaded.
Check FrozenDtypeCheck(model::LlamaForCausalLM& model, const std::map<std::string, LoadedParam>& loaded);

}  // namespace shardbench
