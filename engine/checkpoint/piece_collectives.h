// Moving pieces (engine/checkpoint/param_pieces.h) between every rank and rank 0: the
// collectives behind FULL save/load and adapter export.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "engine/checkpoint/state_dict.h"

namespace shardbench::checkpoint {

// Per piece, of every rank: [begin, numel, has_state, step]. Collective.
struct RankTable {
  at::Tensor t;  // [world_size, pieces, 4], CPU
  int64_t begin(int r, size_t i) const;
  int64_t numel(int r, size_t i) const;
  bool has_state(int r, size_t i) const;
  int64_t step(int r, size_t i) const;
};
RankTable GatherTable(const StateDictTarget& target, const std::vector<ParamPiece>& pieces);

// Rank 0 gets the whole flattened tensor assembled from every rank's `local` elements of piece
// i; other ranks get an undefined tensor. The pieces must tile the tensor in rank order (every
// engine's do; InfraError otherwise). Collective.
at::Tensor GatherToRank0(const StateDictTarget& target, const ParamPiece& p, const RankTable& table, size_t i,
                         const at::Tensor& local);
// The inverse: rank 0's whole flattened `full` (undefined elsewhere) -> every rank's `dst`,
// each receiving only its elements (scatter; broadcast for a replica). Collective.
void SendFromRank0(const StateDictTarget& target, const ParamPiece& p, const RankTable& table, size_t i,
                   const at::Tensor& full, const at::Tensor& dst);

}  // namespace shardbench::checkpoint
