#include "engine/model/param_init.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

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
// (53 bits fit a signed integer exactly: its conversion is one instruction, the unsigned one a
// branchy sequence, and both give the same double.)
double Open01(uint64_t h) { return (static_cast<double>(static_cast<int64_t>(h >> 11)) + 0.5) * 0x1.0p-53; }

}  // namespace

// A normal element as it has always been computed, one at a time with the C library's log and
// cos: the definition every faster path must reproduce bit for bit.
float NormalElement(const ParamInit& init, uint64_t key, uint64_t i) {
  const double u1 = Open01(Mix(key + (2 * i + 1) * kGolden)), u2 = Open01(Mix(key + (2 * i + 2) * kGolden));
  return static_cast<float>(init.a + init.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

namespace {

// Whether `d` = a + term lies so close to the midpoint between two floats that a vectorised log
// or cos (a few units in the last place of a double away from the C library's, so `term` off by
// a few parts in 2^52) could round it to the other float. Such elements (~1 in 10^6) are
// recomputed one at a time, as are floats next to a power of two (its gap below is half the one
// above), zero, subnormals and non-finite values: rare, and not worth reasoning about.
bool NearFloatTie(double d, double a, double term, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
  if (exponent == 0 || exponent == 0xff || mantissa == 0) return true;
  // Half a unit in the last place of f: 2^(exponent - 127 - 24), built as a double.
  const uint64_t half_bits = static_cast<uint64_t>(exponent - 127 - 24 + 1023) << 52;
  double half;
  std::memcpy(&half, &half_bits, sizeof half);
  // How far d may be from the C library's value: 2^-40 of its terms' size, 2^12 times the
  // error of a 1-ulp log and cos carried through sqrt and two products.
  const double slack = (std::fabs(a) + std::fabs(term)) * 0x1.0p-40;
  return std::fabs(std::fabs(d - static_cast<double>(f)) - half) <= slack;
}

// Normal elements [begin, begin + n) into out, in blocks: the splitmix64 counters one at a time,
// then log, sqrt and cos over a whole block with ATen's vectorised double kernels, then
// Box-Muller in the same order of operations as NormalElement. Only log and cos may differ from
// the C library's (in the last bits of a double; sqrt and the products are exact IEEE either
// way), which changes the float only next to a tie between two floats: there NearFloatTie
// sends the element to NormalElement. The scratch blocks are plain memory: an initialisation's
// tracked peak (init_peak_bytes) is the parameters', not this generator's.
void FillNormal(float* out, const ParamInit& init, uint64_t key, int64_t begin, int64_t n) {
  constexpr int64_t kBlock = 8192;
  std::vector<double> scratch(4 * static_cast<size_t>(std::min(kBlock, n)));
  const int64_t size = static_cast<int64_t>(scratch.size() / 4);
  double* pu = scratch.data();
  double* pw = pu + size;
  double* pr = pw + size;
  double* pc = pr + size;
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  const double a = init.a, b = init.b;
  for (int64_t lo = 0; lo < n; lo += kBlock) {
    const int64_t m = std::min(kBlock, n - lo);
    for (int64_t j = 0; j < m; ++j) {
      const uint64_t i = static_cast<uint64_t>(begin + lo + j);
      pu[j] = Open01(Mix(key + (2 * i + 1) * kGolden));
      pw[j] = 2.0 * M_PI * Open01(Mix(key + (2 * i + 2) * kGolden));
    }
    at::Tensor r = at::from_blob(pr, {m}, f64), c = at::from_blob(pc, {m}, f64);
    at::log_out(r, at::from_blob(pu, {m}, f64));
    r.mul_(-2.0).sqrt_();  // sqrt(-2 log u1): scaling by -2 is exact
    at::cos_out(c, at::from_blob(pw, {m}, f64));
    float* o = out + lo;
    for (int64_t j = 0; j < m; ++j) {
      const double term = b * pr[j] * pc[j], d = a + term;
      o[j] = static_cast<float>(d);
      if (NearFloatTie(d, a, term, o[j])) o[j] = NormalElement(init, key, static_cast<uint64_t>(begin + lo + j));
    }
  }
}

}  // namespace

void FillInitRange(const at::Tensor& dst, const ParamInit& init, uint64_t key, int64_t begin) {
  c10::NoGradGuard no_grad;
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (init.kind == ParamInit::Kind::kConstant) {
    dst.fill_(init.a);
    return;
  }
  // Written in place when the destination is a contiguous float tensor in host memory.
  const bool in_place = dst.device().is_cpu() && dst.scalar_type() == at::kFloat && dst.is_contiguous();
  at::Tensor values = in_place ? dst : at::empty({n}, at::kFloat);
  float* out = values.data_ptr<float>();
  at::parallel_for(0, n, 1 << 16, [&](int64_t lo, int64_t hi) {
    if (init.kind == ParamInit::Kind::kNormal) {
      FillNormal(out + lo, init, key, begin + lo, hi - lo);
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
