// Where a run's token batches come from. Every source cuts sample i of step s from
// (seed, s, i) alone, never from the world size or the rank: rank r of a data-parallel job
// takes samples [r*b, (r+1)*b) of the global batch, so ws=2 with batch b sees exactly what ws=1
// with batch 2b sees, and another implementation (peers/) can rebuild the same batches.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace shardbench::model {

struct Batch {
  at::Tensor input_ids;  // [B, T] int64
  at::Tensor labels;     // [B, T] int64, labels[:, t] = input_ids[:, t + 1] of the full sequence
  int64_t tokens() const { return input_ids.numel(); }
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // Samples [first_sample, first_sample + count) of step `step`.
  virtual Batch batch(int64_t step, int64_t first_sample, int64_t count) const = 0;
};

// splitmix64's finaliser (after adding its increment): the counter-based generator the sources
// share. With M = 2^64:
//   SplitMix64(z) = f(z + 0x9e3779b97f4a7c15 mod M), f(z) = g(g(z, 30, 0xbf58476d1ce4e5b9),
//   27, 0x94d049bb133111eb) ^ (. >> 31), g(z, k, c) = (z ^ (z >> k)) * c mod M.
inline uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The hash of sample `sample` of step `step`:
//   SampleHash = SplitMix64(seed ^ SplitMix64(step * 0x100000001b3 mod M ^ sample)).
inline uint64_t SampleHash(uint64_t seed, int64_t step, int64_t sample) {
  return SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(step) * 0x100000001b3ull ^ static_cast<uint64_t>(sample)));
}

}  // namespace shardbench::model
