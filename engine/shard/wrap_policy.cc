#include "engine/shard/wrap_policy.h"

#include <set>

#include "engine/common/error.h"

namespace shardbench::shard {
namespace {

bool IsLoraAdapter(const std::string& path) {
  const auto dot = path.rfind('.');
  const std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
  return leaf == "lora_A" || leaf == "lora_B";
}

// PEFT's lambda policy: a module without children whose own `weight` requires grad.
bool TrainableLeafWeight(model::Module& module, const std::string& path) {
  if (!module.children().empty()) return false;
  const std::string weight = path.empty() ? "weight" : path + ".weight";
  for (auto& p : module.named_parameters(path)) {
    if (p.name == weight) return p.slot->requires_grad();
  }
  return false;
}

// Post-order walk: returns the params under `module` not yet claimed by a unit.
std::vector<model::NamedTensor> Visit(model::Module& module, const std::string& path, bool is_root,
                                      const WrapPolicy& policy, std::vector<UnitPlan>& units) {
  std::vector<model::NamedTensor> unclaimed;
  for (auto& [name, child] : module.children()) {
    auto sub = Visit(*child, path.empty() ? name : path + "." + name, false, policy, units);
    unclaimed.insert(unclaimed.end(), sub.begin(), sub.end());
  }
  // The module's own parameters: everything named_parameters lists minus its children's.
  std::set<std::string> from_children;
  for (auto& [name, child] : module.children()) {
    for (auto& p : child->named_parameters(path.empty() ? name : path + "." + name)) from_children.insert(p.name);
  }
  std::vector<model::NamedTensor> own;
  for (auto& p : module.named_parameters(path)) {
    if (!from_children.count(p.name)) own.push_back(p);
  }
  own.insert(own.end(), unclaimed.begin(), unclaimed.end());

  bool wrap = is_root;
  if (!module.can_be_unit() && !is_root) return own;  // no forward of its own to hook
  switch (policy.kind) {
    case WrapPolicyKind::kTransformerBlock:
      wrap |= module.type_name() == "LlamaDecoderLayer";
      break;
    case WrapPolicyKind::kLoraSeparate:
      wrap |= module.type_name() == "LlamaDecoderLayer" || IsLoraAdapter(path);
      break;
    case WrapPolicyKind::kPeft:
      wrap |= module.type_name() == "LlamaDecoderLayer" || TrainableLeafWeight(module, path);
      break;
    case WrapPolicyKind::kSize: {
      int64_t n = 0;
      for (auto& p : own) n += p.slot->numel();
      wrap |= n >= policy.min_params;
      break;
    }
    case WrapPolicyKind::kNone:
      break;
  }
  if (!wrap) return own;
  if (!own.empty() || is_root) units.push_back({path, &module, own});
  return {};
}

}  // namespace

const char* WrapPolicyKindName(WrapPolicyKind kind) {
  switch (kind) {
    case WrapPolicyKind::kTransformerBlock: return "transformer_block";
    case WrapPolicyKind::kLoraSeparate: return "lora_separate";
    case WrapPolicyKind::kPeft: return "peft";
    case WrapPolicyKind::kSize: return "size";
    case WrapPolicyKind::kNone: return "none";
  }
  return "?";
}

WrapPolicy ParseWrapPolicy(const std::string& name, int64_t min_params) {
  for (auto kind : {WrapPolicyKind::kTransformerBlock, WrapPolicyKind::kLoraSeparate, WrapPolicyKind::kPeft,
                    WrapPolicyKind::kSize, WrapPolicyKind::kNone}) {
    if (name == WrapPolicyKindName(kind)) return {kind, min_params};
  }
  throw InputError("wrap policy '" + name + "': expected one of transformer_block, lora_separate, peft, size, none");
}

std::vector<UnitPlan> PlanUnits(model::LlamaForCausalLM& model, const WrapPolicy& policy) {
  std::vector<UnitPlan> units;
  Visit(model, "", /*is_root=*/true, policy, units);
  return units;
}

}  // namespace shardbench::shard
