// Deterministic token batches with a learnable pattern (the default data source). Sample i of step s depends only on
// (seed, s, i), never on world size or rank: rank r of a data-parallel job takes samples
// [r*b, (r+1)*b) of the global batch, so ws=2 with batch b sees exactly what ws=1 with batch 2b
// sees. The pattern is a fixed random bigram map (token t is followed by perm[t]) so a model
// learns it within a few steps and the loss visibly drops.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "engine/model/data_source.h"

namespace shardbench::model {

class SyntheticData final : public DataSource {
 public:
  SyntheticData(uint64_t seed, int64_t vocab_size, int64_t seq_len);
  Batch batch(int64_t step, int64_t first_sample, int64_t count) const override;

 private:
  uint64_t seed_;
  int64_t vocab_, seq_len_;
  std::vector<int64_t> next_;  // the bigram map
};

}  // namespace shardbench::model
