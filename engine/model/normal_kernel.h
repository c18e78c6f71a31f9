// Normal elements of the counter-based initialisation (engine/model/param_init.h) computed four
// at a time in double SIMD arithmetic, with our own log and cos, and a check that the float they
// round to is the one the scalar definition (NormalElement: the C library's log and cos) gives.
//
// Why this is exact: the definition computes d = a + b * sqrt(-2 log u1) * cos(w) in double and
// rounds it to float. Our log and cos are within a few units in the last place of a double of
// the true values (so of the C library's), which moves d by a few parts in 2^50 — far less than
// the slack the check allows (2^-40 of |a| + |b r c|). The float of d differs from the
// definition's only if d lies within that slack of a midpoint between two floats (about 1
// element in 10^5); such elements, and the rare ones the check does not reason about (next to a
// power of two, zero, subnormal or non-finite floats, cos arguments within 2^-24 of a zero of
// cos), are reported as undecided and the caller computes them with NormalElement.
#pragma once

#include <cstdint>

namespace shardbench::model {

// Elements per call at most.
constexpr int64_t kNormalBlock = 512;

// Writes elements [first, first + n) (n <= kNormalBlock) of the normal(a, b) parameter whose
// key is `key` into out, and the offsets (< n, ascending) of those it could not decide into
// `undecided`, returning how many there are.
using NormalBlockFn = int64_t (*)(float* out, int64_t n, uint64_t key, uint64_t first, double a, double b,
                                  int32_t* undecided);

// Plain C++ (the compiler's baseline: SSE2 pairs on x86-64, NEON on Arm).
int64_t NormalBlockPortable(float* out, int64_t n, uint64_t key, uint64_t first, double a, double b,
                            int32_t* undecided);
// AVX2 + FMA, where built (x86-64) and where the CPU has them; else nullptr.
NormalBlockFn NormalBlockAvx2();
// The fastest this CPU runs.
NormalBlockFn BestNormalBlock();

// The kernel's own log u (u in [2^-54, 1]) and cos w (w in (0, 2 pi]), n a multiple of 4: for
// the test that measures their error against the C library's (tests/engine/normal_kernel_test.cc).
using NormalPartsFn = void (*)(const double* u, const double* w, int64_t n, double* log_u, double* cos_w);
void NormalPartsPortable(const double* u, const double* w, int64_t n, double* log_u, double* cos_w);
NormalPartsFn NormalPartsAvx2();  // nullptr where NormalBlockAvx2() is

}  // namespace shardbench::model
