#include "engine/model/module.h"

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
  for (auto& [name, module] : root.named_modules()) module->reset_parameters(name, seed);
}

void InitializeBuffers(Module& root) {
  for (auto& [name, module] : root.named_modules()) module->reset_buffers();
}

}  // namespace shardbench::model
