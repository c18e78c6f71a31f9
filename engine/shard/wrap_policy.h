// Which modules become units of their own (FSDP's auto_wrap_policy), decided in post-order
// over the modules that have a forward to hook (containers such as LlamaModel never do):
// children before parents, each unit taking the parameters no descendant unit took. The root
// module is always a unit and holds what no other unit does.
#pragma once

#include <string>
#include <vector>

#include "engine/model/llama.h"

namespace shardbench::shard {

enum class WrapPolicyKind {
  kTransformerBlock,  // each decoder layer a unit (transformer_auto_wrap_policy)
  kLoraSeparate,      // + every LoRA adapter (lora_A, lora_B) a unit: PEFT's fsdp_auto_wrap_policy
                      //   as it acts on a LoRA model
  kPeft,              // PEFT's fsdp_auto_wrap_policy as written (peft/utils/other.py): each decoder
                      //   layer, and every leaf module whose `weight` trains, a unit (with LoRA the
                      //   same units as kLoraSeparate; without, every trainable Linear, embedding
                      //   and norm its own unit). The peers call PEFT's function itself.
  kSize,              // a module becomes a unit once its unwrapped params reach min_params
  kNone,              // the whole model is one unit
};

struct WrapPolicy {
  WrapPolicyKind kind = WrapPolicyKind::kTransformerBlock;
  int64_t min_params = 100000000;  // kSize only (size_based_auto_wrap_policy's default 1e8)
};

// "transformer_block" | "lora_separate" | "peft" | "size" | "none": the scenario's sharding.wrap_policy.
const char* WrapPolicyKindName(WrapPolicyKind kind);
// For tests and tools that name a policy; scenarios parse theirs once (harness/scenario/scenario_fields.cc).
WrapPolicy ParseWrapPolicy(const std::string& name, int64_t min_params = 100000000);

struct UnitPlan {
  std::string path;  // module path ("" for the root, "model.layers.0", ...)
  model::Module* module;
  std::vector<model::NamedTensor> params;  // the unit's own params, in registration order
};

// Units in post-order (root last). Units with no parameters are dropped (except the root).
std::vector<UnitPlan> PlanUnits(model::LlamaForCausalLM& model, const WrapPolicy& policy);

}  // namespace shardbench::shard
