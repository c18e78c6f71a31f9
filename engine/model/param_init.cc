#include "engine/model/param_init.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "engine/common/error.h"
#include "engine/model/module.h"

namespace shardbench::model {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1), 53 random bits.
double Open01(uint64_t h) { return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53; }

}  // namespace

void FillInitRange(const at::Tensor& dst, const ParamInit& init, uint64_t key, int64_t begin) {
  c10::NoGradGuard no_grad;
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (init.kind == ParamInit::Kind::kConstant) {
    dst.fill_(init.a);
    return;
  }
  at::Tensor values = at::empty({n}, at::kFloat);
  float* out = values.data_ptr<float>();
  at::parallel_for(0, n, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const uint64_t i = static_cast<uint64_t>(begin + j);
      if (init.kind == ParamInit::Kind::kUniform) {
        out[j] = static_cast<float>(init.a + (init.b - init.a) * Open01(Mix(key + (i + 1) * kGolden)));
      } else {
        const double u1 = Open01(Mix(key + (2 * i + 1) * kGolden)), u2 = Open01(Mix(key + (2 * i + 2) * kGolden));
        out[j] = static_cast<float>(init.a + init.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
      }
    }
  });
  dst.copy_(values);
}

std::map<std::string, ParamInit> CollectParamInits(Module& root) {
  std::map<std::string, ParamInit> out;
  for (auto& [module_name, module] : root.named_modules()) {
    for (auto& [local, slot] : module->own_parameters()) {
      out[module_name.empty() ? local : module_name + "." + local] = module->param_init(local);
    }
  }
  return out;
}

ParamMaterializer InitMaterializer(Module& root, uint64_t seed) {
  auto inits = std::make_shared<std::map<std::string, ParamInit>>(CollectParamInits(root));
  return [inits, seed](const std::string& name, const at::Tensor& dst, int64_t begin) {
    auto it = inits->find(name);
    if (it == inits->end()) throw InfraError("initialisation: no parameter named '" + name + "'");
    FillInitRange(dst, it->second, SeedFor(seed, name), begin);
  };
}

void MaterializeParameters(Module& root, const Materialization& m) {
  c10::NoGradGuard no_grad;
  for (auto& p : root.named_parameters()) {
    if (!p.slot->is_meta()) continue;
    if (!m.fill) throw InfraError("parameter '" + p.name + "' is on the meta device and nothing materialises it");
    const bool requires_grad = p.slot->requires_grad();
    at::Tensor t = at::empty(p.slot->sizes(), p.slot->options().device(m.device).requires_grad(false));
    m.fill(p.name, t.view({-1}), 0);
    *p.slot = t.requires_grad_(requires_grad);
  }
}

}  // namespace shardbench::model
