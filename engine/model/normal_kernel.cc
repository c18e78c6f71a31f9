// The normal kernel (engine/model/normal_kernel.h) for the compiler's baseline instruction set,
// and the choice between it and the AVX2 build (engine/model/normal_kernel_avx2.cc, x86-64 only).
#define SHARDBENCH_NORMAL_ISA portable
#include "engine/model/normal_kernel_body.h"

namespace shardbench::model {

int64_t NormalBlockPortable(float* out, int64_t n, uint64_t key, uint64_t first, double a, double b,
                            int32_t* undecided) {
  return portable::NormalBlock(out, n, key, first, a, b, undecided);
}

void NormalPartsPortable(const double* u, const double* w, int64_t n, double* log_u, double* cos_w) {
  portable::NormalParts(u, w, n, log_u, cos_w);
}

#if defined(SHARDBENCH_HAVE_AVX2_KERNEL)
// engine/model/normal_kernel_avx2.cc; nothing there runs before this file checked the CPU.
namespace avx2 {
int64_t NormalBlock(float* out, int64_t n, uint64_t key, uint64_t first, double a, double b, int32_t* undecided);
void NormalParts(const double* u, const double* w, int64_t n, double* log_u, double* cos_w);
}  // namespace avx2

namespace {
bool CpuHasAvx2() {
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
}
}  // namespace

NormalBlockFn NormalBlockAvx2() { return CpuHasAvx2() ? &avx2::NormalBlock : nullptr; }
NormalPartsFn NormalPartsAvx2() { return CpuHasAvx2() ? &avx2::NormalParts : nullptr; }
#else
NormalBlockFn NormalBlockAvx2() { return nullptr; }
NormalPartsFn NormalPartsAvx2() { return nullptr; }
#endif

NormalBlockFn BestNormalBlock() {
  static const NormalBlockFn best = NormalBlockAvx2() ? NormalBlockAvx2() : &NormalBlockPortable;
  return best;
}

}  // namespace shardbench::model
