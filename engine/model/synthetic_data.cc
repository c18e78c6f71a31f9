#include "engine/model/synthetic_data.h"

#include <ATen/ops/from_blob.h>

#include <numeric>
#include <vector>

#include "engine/model/module.h"

namespace shardbench::model {
namespace {
uint64_t Mix(uint64_t z) { return SplitMix64(z); }
}  // namespace

SyntheticData::SyntheticData(uint64_t seed, int64_t vocab_size, int64_t seq_len)
    : seed_(seed), vocab_(vocab_size), seq_len_(seq_len), next_(vocab_size) {
  std::iota(next_.begin(), next_.end(), 0);
  // Fisher-Yates with the counter-based generator: a permutation fixed by the seed.
  for (int64_t i = vocab_ - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(Mix(SeedFor(seed, "bigram") + i) % static_cast<uint64_t>(i + 1));
    std::swap(next_[i], next_[j]);
  }
}

Batch SyntheticData::batch(int64_t step, int64_t first_sample, int64_t count) const {
  std::vector<int64_t> seq(static_cast<size_t>(count * (seq_len_ + 1)));
  for (int64_t s = 0; s < count; ++s) {
    const uint64_t sample = static_cast<uint64_t>(first_sample + s);
    int64_t tok = static_cast<int64_t>(SampleHash(seed_, step, static_cast<int64_t>(sample)) % static_cast<uint64_t>(vocab_));
    for (int64_t t = 0; t <= seq_len_; ++t) {
      seq[s * (seq_len_ + 1) + t] = tok;
      tok = next_[tok];
    }
  }
  at::Tensor all = at::from_blob(seq.data(), {count, seq_len_ + 1}, at::kLong).clone();
  return Batch{all.narrow(1, 0, seq_len_).contiguous(), all.narrow(1, 1, seq_len_).contiguous()};
}

}  // namespace shardbench::model
