// What a rank holds of one original parameter, in the one engine-independent shape every
// state-dict kind is written from and read into (engine/checkpoint/param_pieces.h).
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

namespace shardbench::shard {

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
  int64_t global_numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

}  // namespace shardbench::shard
