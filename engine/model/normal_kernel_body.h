// The body of the vectorised normal kernel (engine/model/normal_kernel.h), written once with the
// compiler's vector extensions and compiled once per instruction set: the including file names
// the instruction set (SHARDBENCH_NORMAL_ISA, a namespace) first. No include guard on purpose.
//
// Accuracy, which the exactness argument in normal_kernel.h rests on (measured against the C
// library in tests/engine/normal_kernel_test.cc):
//  - Log01(u), u in [2^-54, 1]: u = 2^e m with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s),
//    s = (m - 1) / (m + 1), |s| <= 0.172, the series by a fitted polynomial (within 2^-50
//    relative); m - 1 is exact, s is within 2 roundings; e ln 2 in two parts, the high one exact.
//  - CosOf(w), w in (0, 2 pi]: cos w = sin y with y = pi/2 - w (w <= pi) or w - 3pi/2, each
//    subtraction exact (Sterbenz) where y can be small (w >= pi/4; below, |y| > pi/4 and one
//    rounding is harmless), the constants' low parts added after, so y is within a rounding of
//    the true value relative to itself when |y| >= 2^-24 (below that the caller's check makes
//    the element undecided); sin y on [-pi/2, pi/2] by a fitted polynomial (within 2^-50 relative).
// Measured against the C library over 2^20 arguments and the edges: both within 2^-49.9.
#include <cstdint>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "engine/model/counter_rng.h"
#include "engine/model/normal_kernel.h"

namespace shardbench::model::SHARDBENCH_NORMAL_ISA {
namespace {  // each build's helpers its own, whatever the linker keeps

using V = double __attribute__((vector_size(32)));
using I = int64_t __attribute__((vector_size(32)));
using F = float __attribute__((vector_size(16)));
constexpr int kLanes = 4;

constexpr int64_t kMantissaBits = 0x000fffffffffffffll;
constexpr int64_t kOneBits = 0x3ff0000000000000ll, kTwo52Bits = 0x4330000000000000ll;

inline V Abs(V x) { return (V)((I)x & ~(I{} + (int64_t)0x8000000000000000ull)); }
#if defined(__AVX2__)
inline V VSqrt(V x) { return (V)_mm256_sqrt_pd((__m256d)x); }
inline bool Any(I mask) { return !_mm256_testz_si256((__m256i)mask, (__m256i)mask); }
#else
inline V VSqrt(V x) { return V{__builtin_sqrt(x[0]), __builtin_sqrt(x[1]), __builtin_sqrt(x[2]), __builtin_sqrt(x[3])}; }
inline bool Any(I mask) { return (mask[0] | mask[1] | mask[2] | mask[3]) != 0; }
#endif

inline V Log01(V u) {
  const I bits = (I)u;
  I biased_exponent = bits >> 52;
  V m = (V)((bits & kMantissaBits) | kOneBits);  // [1, 2)
  const I high = m > 0x1.6a09e667f3bcdp+0;       // sqrt(2): halve, one more in the exponent
  m = high ? m * 0.5 : m;
  biased_exponent -= high;  // masks are -1 where true
  // The exponent as a double without a 64-bit integer conversion (AVX2 has none): its bits under
  // 2^52's mantissa.
  const V e = (V)(biased_exponent | kTwo52Bits) - (0x1p52 + 1023.0);
  const V s = (m - 1.0) / (m + 1.0), z = s * s;
  // 1/3 + z/5 + z^2/7 + ..., (atanh(s) - s) / s^3, as a degree-5 polynomial in z = s^2 fitted on
  // [0, 0.0295] (mpmath.chebyfit: within 2.4e-14, so log m within 2^-50 relative).
  V q = V{} + 0x1.546a3155bacbfp-4;
  q = q * z + 0x1.7382dbfa1ce75p-4;
  q = q * z + 0x1.c71fccd953895p-4;
  q = q * z + 0x1.2492462af84abp-3;
  q = q * z + 0x1.9999999b8677ap-3;
  q = q * z + 0x1.55555555553b8p-2;
  const V two_s = s + s;
  const V log_m = two_s + two_s * z * q;
  return e * 0x1.62e42feep-1 + (e * 0x1.a39ef35793c76p-33 + log_m);  // ln 2, high part exact
}

// sin y for |y| <= pi/2.
inline V SinHalfPi(V y) {
  const V z = y * y;
  // -1/3! + z/5! - ..., (sin y - y) / y^3, as a degree-6 polynomial in z = y^2 fitted on
  // [0, (pi/2)^2] (mpmath.chebyfit: within 1.9e-16, so sin y within 2^-50 relative).
  V p = V{} + -0x1.a1095286ba17ap-41;
  p = p * z + 0x1.60f6f0d66f8acp-33;
  p = p * z + -0x1.ae63bdfa8502ap-26;
  p = p * z + 0x1.71de394e5888cp-19;
  p = p * z + -0x1.a01a019e69965p-13;
  p = p * z + 0x1.1111111110067p-7;
  p = p * z + -0x1.555555555554fp-3;
  return y + y * z * p;
}

// cos w for w in (0, 2 pi].
inline V CosOf(V w) {
  const V below = (0x1.921fb54442d18p+0 - w) + 0x1.1a62633145c07p-54;  // pi/2 - w
  const V above = (w - 0x1.2d97c7f3321d2p+2) - 0x1.a79394c9e8a0ap-53;  // w - 3pi/2
  const V y = w <= 0x1.921fb54442d18p+1 ? below : above;
  return SinHalfPi(y);
}

template <bool kZeroMean>
int64_t NormalBlockOf(float* out, int64_t n, uint64_t key, uint64_t first, double a, double b, int32_t* undecided) {
  using namespace counter_rng;
  alignas(32) double u1[kNormalBlock], w[kNormalBlock];
  // The draws one element at a time (64-bit multiplies: AVX2 has none, and emulated with 32-bit
  // ones they were slower), exactly as NormalElement computes them, so w is its very argument
  // of cos. Keep w's product alone in its loop: in the cos pass -ffp-contract could fuse it
  // into pi/2 - w, which moves y by up to 2^-53 absolute, far beyond the slack when y is small.
  uint64_t counter = key + (2 * first + 1) * kGolden;
  for (int64_t j = 0; j < n; ++j, counter += 2 * kGolden) {
    u1[j] = Open01(Mix(counter));
    w[j] = 0x1.921fb54442d18p+2 * Open01(Mix(counter + kGolden));  // 2.0 * M_PI, as the definition
  }
  for (int64_t j = n; j % kLanes != 0; ++j) u1[j] = 0.5, w[j] = 1.0;  // padding, never stored

  // Then three passes, each with a short dependency chain: a core overlaps the independent
  // vectors of a pass. In one pass a vector's chain (divide, square root, two polynomials, the
  // check) outgrew the core's reorder window, and it ran 1.3x slower.
  const int64_t padded = (n + kLanes - 1) / kLanes * kLanes;
  for (int64_t j = 0; j < padded; j += kLanes) {
    V u;
    __builtin_memcpy(&u, u1 + j, sizeof u);
    u = VSqrt(Log01(u) * -2.0);
    __builtin_memcpy(u1 + j, &u, sizeof u);
  }
  for (int64_t j = 0; j < padded; j += kLanes) {
    V ww;
    __builtin_memcpy(&ww, w + j, sizeof ww);
    ww = CosOf(ww);
    __builtin_memcpy(w + j, &ww, sizeof ww);
  }
  int64_t count = 0;
  for (int64_t j = 0; j < n; j += kLanes) {
    V r, c;
    __builtin_memcpy(&r, u1 + j, sizeof r);
    __builtin_memcpy(&c, w + j, sizeof c);
    const I near_zero = Abs(c) < 0x1p-24;  // |y| < 2^-24 among them (|sin y| <= |y|)
    const V term = b * r * c, d = a + term;
    const F f = __builtin_convertvector(d, F);
    // The check, on d's bits: a float keeps the top 23 of d's 52 mantissa bits and rounds on
    // the 29 below, so `dist` is d's distance from the midpoint between two floats in units of
    // d's last place. The slack, (|a| + |term|) 2^-40, is under 2^(13 + e_s - e_d) of those
    // units (e_s, e_d: the exponents of |a| + |term| and of d).
    const I bits = (I)d;
    const I dist = (bits & ((1ll << 29) - 1)) - (1ll << 28);
    const I e_d = (bits >> 52) & 0x7ff;
    I near_tie;
    if constexpr (kZeroMean) {  // d = term: e_s = e_d
      near_tie = (dist < (1ll << 13)) & (dist > -(1ll << 13));
    } else {
      const I e_s = (I)(Abs(V{} + a) + Abs(term)) >> 52, shift = e_s - e_d + 13;
      // From 2^28 units on the slack reaches half a float's gap: every element is undecided
      // (there d is often a float itself, dist = -2^28: a + term cancelled, exactly).
      const I within = (I{} + 1) << (shift < 28 ? shift : I{} + 28);
      near_tie = (shift >= 28) | ((dist < within) & (dist > -within));
    }
    // Floats where that reasoning does not hold: the top 23 bits all 0 or all 1 (a power of two
    // at hand: the gap below it is half the one above), and outside the normal floats (zero,
    // subnormal, near overflow, not finite).
    const I mantissa = (bits >> 29) & 0x7fffff;
    const I power_of_two = (mantissa == 0) | (mantissa == 0x7fffff);
    const I not_normal = (e_d < 1023 - 125) | (e_d > 1023 + 126);
    const I undecidable = near_tie | power_of_two | not_normal | near_zero;
    const int64_t lanes = n - j < kLanes ? n - j : kLanes;
    if (lanes == kLanes) {
      __builtin_memcpy(out + j, &f, sizeof f);
    } else {
      for (int64_t k = 0; k < lanes; ++k) out[j + k] = f[k];
    }
    if (Any(undecidable)) {
      for (int64_t k = 0; k < lanes; ++k) {
        if (undecidable[k]) undecided[count++] = static_cast<int32_t>(j + k);
      }
    }
  }
  return count;
}

}  // namespace

// The check is cheaper with a mean of zero, the usual one.
int64_t NormalBlock(float* out, int64_t n, uint64_t key, uint64_t first, double a, double b, int32_t* undecided) {
  return a == 0.0 ? NormalBlockOf<true>(out, n, key, first, a, b, undecided)
                  : NormalBlockOf<false>(out, n, key, first, a, b, undecided);
}

void NormalParts(const double* u, const double* w, int64_t n, double* log_u, double* cos_w) {
  for (int64_t j = 0; j < n; j += kLanes) {
    V x, y;
    __builtin_memcpy(&x, u + j, sizeof x);
    __builtin_memcpy(&y, w + j, sizeof y);
    x = Log01(x);
    y = CosOf(y);
    __builtin_memcpy(log_u + j, &x, sizeof x);
    __builtin_memcpy(cos_w + j, &y, sizeof y);
  }
}

}  // namespace shardbench::model::SHARDBENCH_NORMAL_ISA
