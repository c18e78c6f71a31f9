// Batches cut from a flat binary file of token ids (the nanoGPT / Megatron convention:
// little-endian uint16 or uint32, no header), memory-mapped and read in place.
//
// The order, exactly (so that another implementation rebuilds the same batches): with N tokens
// in the file and T = seq_len, sample i of step s is the window of T + 1 tokens starting at
//   offset(s, i) = SampleHash(seed, s, i) mod (N - T)       (engine/model/data_source.h)
// input_ids = window[0:T], labels = window[1:T+1]. Rank r with batch b and A micro-batches
// takes samples [(r*A + m)*b, (r*A + m + 1)*b) for micro-batch m, as with synthetic data.
#pragma once

#include <cstdint>
#include <string>

#include "engine/model/data_source.h"

namespace shardbench::model {

class TokenFileData final : public DataSource {
 public:
  // InputError naming the file when it cannot be opened or mapped, its size is not a multiple
  // of the token width, or it holds fewer than seq_len + 1 tokens.
  TokenFileData(const std::string& path, const std::string& token_dtype, uint64_t seed, int64_t vocab_size,
                int64_t seq_len);
  ~TokenFileData() override;
  TokenFileData(const TokenFileData&) = delete;
  TokenFileData& operator=(const TokenFileData&) = delete;

  // InputError naming the file, the offset and the id when a token is not below vocab_size.
  Batch batch(int64_t step, int64_t first_sample, int64_t count) const override;
  int64_t tokens() const { return tokens_; }

 private:
  int64_t token(int64_t index) const;

  std::string path_;
  int width_;  // bytes per token: 2 or 4
  uint64_t seed_;
  int64_t vocab_, seq_len_, tokens_ = 0;
  const unsigned char* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace shardbench::model
