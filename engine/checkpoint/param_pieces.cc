#include "engine/checkpoint/param_pieces.h"

#include <ATen/ATen.h>

#include <zlib.h>

namespace shardbench::checkpoint {

namespace {
PieceState Slices(const ParamPiece& piece, const optim::AdamWState& s) {
  PieceState out;
  out.step = s.step;
  if (!s.defined()) return out;
  out.exp_avg = s.exp_avg.view({-1}).narrow(0, piece.owner_offset, piece.numel);
  out.exp_avg_sq = s.exp_avg_sq.view({-1}).narrow(0, piece.owner_offset, piece.numel);
  return out;
}
}  // namespace

PieceState StateOf(const ParamPiece& piece, optim::AdamW& optimizer) {
  const optim::AdamWState* s = optimizer.find_state(piece.owner);
  return s ? Slices(piece, *s) : PieceState{};
}

PieceState MaterializedStateOf(const ParamPiece& piece, optim::AdamW& optimizer) {
  return Slices(piece, optimizer.materialize_state(piece.owner));
}

void SetStep(const ParamPiece& piece, optim::AdamW& optimizer, int64_t step) {
  optim::AdamWState& s = optimizer.materialize_state(piece.owner);
  s.step = step;
  optimizer.sync_step_tensor(s);
}

std::pair<int64_t, int64_t> OwnedRange(const ParamPiece& piece, int rank, int world_size) {
  if (!piece.replicated) return {piece.begin, piece.numel};
  const int64_t total = piece.global_numel();
  if (piece.shape.empty()) return rank == 0 ? std::make_pair(int64_t{0}, total) : std::make_pair(int64_t{0}, int64_t{0});
  const int64_t rows = piece.shape[0], row = rows > 0 ? total / rows : 0;
  const int64_t per = (rows + world_size - 1) / world_size;
  const int64_t first = std::min(rows, per * rank), last = std::min(rows, per * (rank + 1));
  return {first * row, (last - first) * row};
}

uint32_t TensorCrc32(const at::Tensor& t) {
  const at::Tensor c = t.detach().cpu().contiguous();
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* bytes = static_cast<const Bytef*>(c.data_ptr());
  for (size_t done = 0, n = c.nbytes(); done < n;) {  // zlib takes at most 4 GiB per call
    const size_t chunk = std::min<size_t>(n - done, size_t{1} << 30);
    crc = crc32(crc, bytes + done, static_cast<uInt>(chunk));
    done += chunk;
  }
  return static_cast<uint32_t>(crc);
}

std::vector<PieceDigest> DigestPieces(const std::vector<ParamPiece>& pieces, optim::AdamW* optimizer) {
  std::vector<PieceDigest> out;
  for (const auto& p : pieces) {
    PieceDigest d;
    d.name = p.name;
    d.param = TensorCrc32(p.param);
    if (optimizer && p.trainable) {
      const PieceState s = StateOf(p, *optimizer);
      if (s.defined()) {
        d.has_state = true;
        d.exp_avg = TensorCrc32(s.exp_avg);
        d.exp_avg_sq = TensorCrc32(s.exp_avg_sq);
        d.step = s.step;
      }
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace shardbench::checkpoint
