#include "engine/shard/dim0_layout.h"

#include <algorithm>

namespace shardbench::shard {

int64_t Dim0Layout::local_rows(int rank) const {
  const int64_t first = first_row(rank);
  return std::min(rows, first + rows_per_rank) - first;
}

Dim0Layout ComputeDim0Layout(const std::vector<int64_t>& shape, int world_size) {
  Dim0Layout l;
  l.rows = shape.empty() ? 1 : shape[0];
  l.row_numel = 1;
  for (size_t i = 1; i < shape.size(); ++i) l.row_numel *= shape[i];
  l.rows_per_rank = (l.rows + world_size - 1) / world_size;
  return l;
}

}  // namespace shardbench::shard
