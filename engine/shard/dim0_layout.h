// How FSDP2 shards one parameter: along dim 0 in equal, padded chunks. Every rank holds
// ceil(rows / world size) rows of storage; rank r's real rows are [r * per_rank, ...) clipped to
// the tensor, so the last ranks may hold fewer real rows, or none (their chunk is all padding).
// The one layout rule the per-parameter engine, its checkpoints and the memory model share.
#pragma once

#include <cstdint>
#include <vector>

namespace shardbench::shard {

struct Dim0Layout {
  int64_t rows = 1;           // global dim 0 (a 0-dim tensor is one row of one element)
  int64_t row_numel = 1;      // elements per row
  int64_t rows_per_rank = 1;  // padded rows every rank stores
  int64_t first_row(int rank) const { return rows < rows_per_rank * rank ? rows : rows_per_rank * rank; }
  int64_t local_rows(int rank) const;  // real rows rank holds (0 .. rows_per_rank)
  int64_t padded_numel() const { return rows_per_rank * row_numel; }  // per rank, padding included
};

Dim0Layout ComputeDim0Layout(const std::vector<int64_t>& shape, int world_size);

}  // namespace shardbench::shard
