// What a rank holds of each original parameter, in one engine-independent shape that every
// state-dict kind is written from and read into.
//
// A piece is elements [begin, begin + numel) of the parameter's row-major flattening. Every
// engine's local data is such a range: a flat-parameter shard cuts each parameter it overlaps
// into one contiguous range, a dim-0 (per-parameter) shard is a row range, and an unsharded
// replica is the whole tensor. Pieces of one parameter across ranks are in rank order and do
// not overlap (unless replicated), which is what lets a checkpoint saved by one engine at one
// world size be read by another engine at another.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/llama.h"
#include "engine/optim/adamw.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/shard/per_param_sharded_model.h"

namespace shardbench::checkpoint {

struct ParamPiece {
  std::string name;             // original fully qualified name (HF)
  std::vector<int64_t> shape;   // global shape
  int64_t begin = 0, numel = 0;
  bool replicated = false;      // every rank holds the whole parameter (unsharded engine)
  bool trainable = false;
  at::Tensor param;             // 1-D view of this rank's elements, writable (no autograd)
  // The tensor the optimizer holds for this piece (an original parameter, or a flat shard
  // several pieces share) and where this piece starts in that tensor's flattened state.
  at::Tensor owner;
  int64_t owner_offset = 0;
  int64_t global_numel() const;
};

// Every parameter of the model, in the model's order, on every rank (a rank holding none of a
// parameter still lists it, with numel 0), so collectives over pieces line up.
std::vector<ParamPiece> PiecesOfUnsharded(model::LlamaForCausalLM& model);
std::vector<ParamPiece> PiecesOfFlat(model::LlamaForCausalLM& model, shard::FlatShardedModel& flat);
std::vector<ParamPiece> PiecesOfPerParam(model::LlamaForCausalLM& model, shard::PerParamShardedModel& sharded);

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
