#include "engine/model/device_init.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/model/counter_rng.h"

namespace shardbench::model {
namespace {

using counter_rng::kGolden;

// Elements per round: bounds the temporaries (about ten 64-bit tensors of this length).
constexpr int64_t kChunk = int64_t{1} << 23;

// uint64 constants as the int64 bits ATen holds them.
constexpr int64_t Bits(uint64_t v) { return static_cast<int64_t>(v); }

// z >> k on the unsigned value: the arithmetic shift with the copied sign bits masked off.
at::Tensor ShiftRightLogical(const at::Tensor& z, int k) {
  return at::bitwise_and(at::bitwise_right_shift(z, k), Bits((uint64_t{1} << (64 - k)) - 1));
}

// counter_rng::Mix, elementwise (wrapping 64-bit multiplies).
at::Tensor Mix(at::Tensor z) {
  z = at::bitwise_xor(z, ShiftRightLogical(z, 30)).mul_(Bits(0xbf58476d1ce4e5b9ull));
  z = at::bitwise_xor(z, ShiftRightLogical(z, 27)).mul_(Bits(0x94d049bb133111ebull));
  return at::bitwise_xor(z, ShiftRightLogical(z, 31));
}

// counter_rng::Open01: the top 53 bits, exactly, as a double in (0, 1).
at::Tensor Open01(const at::Tensor& h) { return ShiftRightLogical(h, 11).to(at::kDouble).add_(0.5).mul_(0x1.0p-53); }

// Draw `step * i + offset` of the key for elements i in [first, first + n).
at::Tensor Draws(uint64_t key, uint64_t first, int64_t n, uint64_t step, uint64_t offset, const at::TensorOptions& o) {
  at::Tensor counter = at::arange(n, o.dtype(at::kLong));
  // key + (step * (first + j) + offset) * golden, all mod 2^64.
  counter.mul_(Bits(step * kGolden)).add_(Bits(key + (step * first + offset) * kGolden));
  return Open01(Mix(counter));
}

// engine/model/normal_kernel_body.h's check on d = a + term (term = b r c) as tensor ops:
// true where d's float is not certain to be the C library's.
at::Tensor Undecidable(const at::Tensor& d, const at::Tensor& term, const at::Tensor& c, double a) {
  const at::Tensor bits = d.view(at::kLong);
  const at::Tensor dist = at::bitwise_and(bits, (int64_t{1} << 29) - 1).sub_(int64_t{1} << 28).abs_();
  const at::Tensor e_d = at::bitwise_and(at::bitwise_right_shift(bits, 52), 0x7ff);
  at::Tensor near_tie;
  if (a == 0.0) {
    near_tie = dist.lt(int64_t{1} << 13);
  } else {
    const at::Tensor e_s = at::bitwise_right_shift(term.abs().add_(std::abs(a)).view(at::kLong), 52);
    const at::Tensor shift = (e_s - e_d).add_(13);
    const at::Tensor within = at::bitwise_left_shift(at::ones_like(shift), shift.clamp(0, 28));
    near_tie = shift.ge(28).logical_or_(dist.lt(within));
  }
  const at::Tensor mantissa = at::bitwise_and(at::bitwise_right_shift(bits, 29), 0x7fffff);
  return near_tie.logical_or_(mantissa.eq(0))
      .logical_or_(mantissa.eq(0x7fffff))
      .logical_or_(e_d.lt(1023 - 125))
      .logical_or_(e_d.gt(1023 + 126))
      .logical_or_(c.abs().lt(0x1p-24));
}

// Normal elements [first, first + n) as floats on o's device; undecided ones from the host.
at::Tensor Normals(const ParamInit& init, uint64_t key, uint64_t first, int64_t n, const at::TensorOptions& o,
                   DeviceInitStats& stats) {
  const at::Tensor u1 = Draws(key, first, n, 2, 1, o), u2 = Draws(key, first, n, 2, 2, o);
  const at::Tensor r = at::log(u1).mul_(-2.0).sqrt_();
  const at::Tensor c = at::cos(u2.mul(0x1.921fb54442d18p+2));  // 2.0 * M_PI, as the definition
  const at::Tensor term = r.mul_(init.b).mul_(c);              // (b * r) * c
  const at::Tensor d = term.add(init.a);
  at::Tensor f = d.to(at::kFloat);
  const at::Tensor undecided = at::nonzero(Undecidable(d, term, c, init.a)).view({-1}).cpu();
  if (undecided.numel() > 0) {
    const int64_t* j = undecided.data_ptr<int64_t>();
    at::Tensor exact = at::empty({undecided.numel()}, at::kFloat);
    float* e = exact.data_ptr<float>();
    for (int64_t k = 0; k < undecided.numel(); ++k)
      e[k] = NormalElement(init, key, first + static_cast<uint64_t>(j[k]));
    f.index_put_({undecided.to(o.device())}, exact.to(o.device()));
    stats.recomputed_on_host += undecided.numel();
  }
  return f;
}

}  // namespace

DeviceInitStats FillInitRangeOnDevice(const at::Tensor& dst, const ParamInit& init, uint64_t key, int64_t begin) {
  c10::NoGradGuard no_grad;
  DeviceInitStats stats;
  stats.elements = dst.numel();
  if (dst.numel() == 0) return stats;
  if (init.kind == ParamInit::Kind::kConstant) {
    dst.fill_(init.a);
    return stats;
  }
  const at::TensorOptions o = at::TensorOptions().device(dst.device());
  at::Tensor flat = dst.is_contiguous() ? dst.view({-1}) : at::empty({dst.numel()}, dst.options());
  for (int64_t lo = 0; lo < flat.numel(); lo += kChunk) {
    const int64_t n = std::min(kChunk, flat.numel() - lo);
    const uint64_t first = static_cast<uint64_t>(begin + lo);
    at::Tensor values;
    if (init.kind == ParamInit::Kind::kNormal) {
      values = Normals(init, key, first, n, o, stats);
    } else {  // a + (b - a) u, as the host computes it
      values = Draws(key, first, n, 1, 1, o).mul_(init.b - init.a).add_(init.a).to(at::kFloat);
    }
    flat.narrow(0, lo, n).copy_(values);
  }
  if (!dst.is_contiguous()) dst.copy_(flat.view(dst.sizes()));
  return stats;
}

}  // namespace shardbench::model
