#include "engine/model/param_init.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"
#include "engine/model/counter_rng.h"
#include "engine/model/device_init.h"
#include "engine/model/module.h"
#include "engine/model/normal_kernel.h"

namespace shardbench::model {

using counter_rng::kGolden;
using counter_rng::Mix;
using counter_rng::Open01;

// A normal element as it has always been computed, one at a time with the C library's log and
// cos: the definition every faster path must reproduce bit for bit.
float NormalElement(const ParamInit& init, uint64_t key, uint64_t i) {
  const double u1 = Open01(Mix(key + (2 * i + 1) * kGolden)), u2 = Open01(Mix(key + (2 * i + 2) * kGolden));
  return static_cast<float>(init.a + init.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

void FillNormal(NormalBlockFn block, float* out, const ParamInit& init, uint64_t key, int64_t begin, int64_t n) {
  int32_t undecided[kNormalBlock];
  for (int64_t lo = 0; lo < n; lo += kNormalBlock) {
    const int64_t m = std::min(kNormalBlock, n - lo);
    const uint64_t first = static_cast<uint64_t>(begin + lo);
    const int64_t count = block(out + lo, m, key, first, init.a, init.b, undecided);
    for (int64_t k = 0; k < count; ++k) out[lo + undecided[k]] = NormalElement(init, key, first + undecided[k]);
  }
}

void FillInitRange(const at::Tensor& dst, const ParamInit& init, uint64_t key, int64_t begin) {
  c10::NoGradGuard no_grad;
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (init.kind == ParamInit::Kind::kConstant) {
    dst.fill_(init.a);
    return;
  }
  // A tensor on a device is filled there (engine/model/device_init.h: bit for bit these values).
  if (!dst.device().is_cpu()) {
    FillInitRangeOnDevice(dst, init, key, begin);
    return;
  }
  // Written in place when the destination is a contiguous float tensor in host memory.
  const bool in_place = dst.device().is_cpu() && dst.scalar_type() == at::kFloat && dst.is_contiguous();
  at::Tensor values = in_place ? dst : at::empty({n}, at::kFloat);
  float* out = values.data_ptr<float>();
  at::parallel_for(0, n, 1 << 16, [&](int64_t lo, int64_t hi) {
    if (init.kind == ParamInit::Kind::kNormal) {
      FillNormal(BestNormalBlock(), out + lo, init, key, begin + lo, hi - lo);
      return;
    }
    for (int64_t j = lo; j < hi; ++j) {
      const uint64_t i = static_cast<uint64_t>(begin + j);
      out[j] = static_cast<float>(init.a + (init.b - init.a) * Open01(Mix(key + (i + 1) * kGolden)));
    }
  });
  if (!in_place) dst.copy_(values.view(dst.sizes()));
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
