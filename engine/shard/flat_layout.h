// Where each parameter sits in a flat buffer, and how the buffer splits into rank chunks: the
// one layout rule both the engine and the memory model use. With use_orig_params every param
// starts 16-byte aligned (as FSDP does), so alignment padding is part of the flat numel;
// the buffer is right-padded to a multiple of world size.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace shardbench::shard {

struct FlatLayout {
  std::vector<int64_t> offsets;  // per param
  int64_t unpadded_numel = 0;    // params + alignment padding
  int64_t shard_numel = 0;       // per rank
  int64_t padded_numel(int world_size) const { return shard_numel * world_size; }
  // The part of [offset, offset + numel) in `rank`'s chunk, as (start within the chunk,
  // length); length 0 when the rank holds none of it.
  std::pair<int64_t, int64_t> local_range(int64_t offset, int64_t numel, int rank) const;
  int64_t overlap(int64_t offset, int64_t numel, int rank) const { return local_range(offset, numel, rank).second; }
};

FlatLayout ComputeFlatLayout(const std::vector<int64_t>& numels, int64_t element_size, bool align_16_bytes,
                             int world_size);

}  // namespace shardbench::shard
