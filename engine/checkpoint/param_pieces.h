// Optimizer state, digests and owned ranges of ParamPieces (engine/shard/param_piece.h), the
// engine-independent shape every state-dict kind is written from and read into. Each engine
// makes its own pieces (ShardedModel::pieces).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/optim/adamw.h"
#include "engine/shard/param_piece.h"

namespace shardbench::checkpoint {

using ParamPiece = shard::ParamPiece;

// The piece's slices of its owner's optimizer state, 1-D; undefined tensors when the owner
// has no state yet.
struct PieceState {
  at::Tensor exp_avg, exp_avg_sq;
  int64_t step = 0;
  bool defined() const { return exp_avg.defined(); }
};
PieceState StateOf(const ParamPiece& piece, optim::AdamW& optimizer);
// Like StateOf, allocating the owner's state first if it has none.
PieceState MaterializedStateOf(const ParamPiece& piece, optim::AdamW& optimizer);
// Sets the owner's step (and fused's step tensor).
void SetStep(const ParamPiece& piece, optim::AdamW& optimizer, int64_t step);

// CRC-32 of a piece's bytes and of its optimizer state: what a check compares before and after
// a save/load (bit-exact, without keeping a copy of the state in memory).
struct PieceDigest {
  std::string name;
  uint32_t param = 0, exp_avg = 0, exp_avg_sq = 0;
  int64_t step = 0;
  bool has_state = false;
  bool operator==(const PieceDigest& o) const {
    return name == o.name && param == o.param && exp_avg == o.exp_avg && exp_avg_sq == o.exp_avg_sq &&
           step == o.step && has_state == o.has_state;
  }
};
// `optimizer` may be null (parameters only).
std::vector<PieceDigest> DigestPieces(const std::vector<ParamPiece>& pieces, optim::AdamW* optimizer);
uint32_t TensorCrc32(const at::Tensor& t);

// The element range a rank writes for `piece` in a SHARDED checkpoint: the piece itself, or
// for a replica, rank r's dim-0 chunk (torch.chunk: ceil(rows / world size) rows per rank, the
// last ranks possibly empty), so replicas are written once, spread over the ranks.
std::pair<int64_t, int64_t> OwnedRange(const ParamPiece& piece, int rank, int world_size);

}  // namespace shardbench::checkpoint
