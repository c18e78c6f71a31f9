#include "engine/model/module.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

namespace shardbench::model {
namespace {
std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}
}  // namespace

std::vector<NamedTensor> Module::named_parameters(const std::string& prefix) {
  std::vector<NamedTensor> out;
  for (auto& [name, slot] : params_) out.push_back({Join(prefix, name), slot});
  for (auto& [name, child] : children_) {
    auto sub = child->named_parameters(Join(prefix, name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::vector<NamedTensor> Module::named_buffers(const std::string& prefix) {
  std::vector<NamedTensor> out;
  for (auto& [name, slot] : buffers_) out.push_back({Join(prefix, name), slot});
  for (auto& [name, child] : children_) {
    auto sub = child->named_buffers(Join(prefix, name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules(const std::string& prefix) {
  std::vector<std::pair<std::string, Module*>> out{{prefix, this}};
  for (auto& [name, child] : children_) {
    auto sub = child->named_modules(Join(prefix, name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

int64_t CountParameters(Module& m, bool trainable_only) {
  int64_t n = 0;
  for (auto& p : m.named_parameters()) {
    if (!trainable_only || p.slot->requires_grad()) n += p.slot->numel();
  }
  return n;
}

uint64_t SeedFor(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  uint64_t z = h ^ (seed + 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void InitializeParameters(Module& root, uint64_t seed) {
  c10::NoGradGuard no_grad;
  const ParamMaterializer fill = InitMaterializer(root, seed);
  for (auto& p : root.named_parameters()) {
    if (p.slot->is_meta()) continue;
    if (p.slot->is_contiguous()) {
      fill(p.name, p.slot->detach().view({-1}), 0);
    } else {
      at::Tensor flat = at::empty({p.slot->numel()}, p.slot->options().requires_grad(false));
      fill(p.name, flat, 0);
      p.slot->detach().copy_(flat.view(p.slot->sizes()));
    }
  }
}

void MaterializeBuffers(Module& root, const at::Device& device) {
  for (auto& b : root.named_buffers()) {
    if (!b.slot->is_meta()) continue;
    *b.slot = at::full(b.slot->sizes(), std::nan(""), b.slot->options().device(device));
  }
  InitializeBuffers(root);
}

void InitializeBuffers(Module& root) {
  for (auto& [name, module] : root.named_modules()) module->reset_buffers();
}

}  // namespace shardbench::model
