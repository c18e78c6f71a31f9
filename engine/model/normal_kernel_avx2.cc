// The normal kernel (engine/model/normal_kernel.h) built for AVX2 + FMA: four doubles a vector.
// This file is compiled with -mavx2 -mfma and without the engine's precompiled header, and
// includes nothing with inline functions of external linkage, so no AVX2 instruction can leak
// into code a CPU without AVX2 runs; NormalBlockAvx2() checks the CPU before handing it out.
#define SHARDBENCH_NORMAL_ISA avx2
#include "engine/model/normal_kernel_body.h"

namespace shardbench::model {

namespace {
bool CpuHasAvx2() {
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
}
}  // namespace

NormalBlockFn NormalBlockAvx2() { return CpuHasAvx2() ? &avx2::NormalBlock : nullptr; }
NormalPartsFn NormalPartsAvx2() { return CpuHasAvx2() ? &avx2::NormalParts : nullptr; }

}  // namespace shardbench::model
