// Parameter initialisation that any rank can compute for any slice of a tensor on its own:
// element i of a parameter is a pure function of (seed, parameter name, i) — a counter-based
// generator (splitmix64 of the key and the element index, Box-Muller for normals). Eager
// initialisation fills the whole range; meta-device initialisation fills only the elements a
// rank holds, at a cost proportional to its shard, and the two agree bit for bit.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "engine/model/normal_kernel.h"

namespace shardbench::model {

class Module;

struct ParamInit {
  enum class Kind { kConstant, kNormal, kUniform } kind = Kind::kConstant;
  double a = 0.0, b = 0.0;  // constant a; normal(mean a, std b); uniform [a, b)
};

// Fills `dst` (1-D, contiguous, any dtype/device) with elements [begin, begin + numel) of the
// parameter whose key is `key` (SeedFor(seed, name)). Normals are computed four at a time
// (engine/model/normal_kernel.h), equal bit for bit to NormalElement. A destination on a device
// is filled there, to the same bits (engine/model/device_init.h).
void FillInitRange(const at::Tensor& dst, const ParamInit& init, uint64_t key, int64_t begin);
// Normal elements [begin, begin + n) into out with `block` (engine/model/normal_kernel.h) a block
// at a time, the few elements it cannot decide by NormalElement. FillInitRange uses the fastest
// build; the benchmark names one.
void FillNormal(NormalBlockFn block, float* out, const ParamInit& init, uint64_t key, int64_t begin, int64_t n);
// Element i of a normal parameter, the scalar definition (Box-Muller over two splitmix64 draws,
// the C library's log and cos).
float NormalElement(const ParamInit& init, uint64_t key, uint64_t i);

// Fills `dst` with elements [begin, begin + dst.numel()) of parameter `name` (row-major): every
// element of it (engines allocate shards uninitialised and zero only what no fill covers).
using ParamMaterializer = std::function<void(const std::string& name, const at::Tensor& dst, int64_t begin)>;

// Each module's own initialisation of each of its parameters, by fully qualified name (the
// module tree may be on the meta device).
std::map<std::string, ParamInit> CollectParamInits(Module& root);
// Materialises from the modules' own initialisation with `seed`.
ParamMaterializer InitMaterializer(Module& root, uint64_t seed);

// Where and how a sharding engine materialises parameters that are still on the meta device:
// only the elements its rank holds, on `device`.
struct Materialization {
  ParamMaterializer fill;  // unset: parameters must already be materialised
  at::Device device = at::Device(at::kCPU);
};

// The unsharded engine's meta-device init: every parameter whole, on `device` (requires_grad
// kept).
void MaterializeParameters(Module& root, const Materialization& m);

}  // namespace shardbench::model
