#include "engine/shard/flat_layout.h"

#include <algorithm>

namespace shardbench::shard {

std::pair<int64_t, int64_t> FlatLayout::local_range(int64_t offset, int64_t numel, int rank) const {
  const int64_t begin = rank * shard_numel, end = begin + shard_numel;
  const int64_t lo = std::max(begin, offset), hi = std::min(end, offset + numel);
  return hi > lo ? std::make_pair(lo - begin, hi - lo) : std::make_pair(int64_t{0}, int64_t{0});
}

FlatLayout ComputeFlatLayout(const std::vector<int64_t>& numels, int64_t element_size, bool align_16_bytes,
                             int world_size) {
  FlatLayout l;
  const int64_t align = align_16_bytes ? std::max<int64_t>(1, 16 / element_size) : 1;
  int64_t offset = 0;
  for (int64_t n : numels) {
    offset = (offset + align - 1) / align * align;
    l.offsets.push_back(offset);
    offset += n;
  }
  l.unpadded_numel = offset;
  l.shard_numel = (offset + world_size - 1) / world_size;
  return l;
}

}  // namespace shardbench::shard
