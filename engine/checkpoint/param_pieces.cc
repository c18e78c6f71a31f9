#include "engine/checkpoint/param_pieces.h"

#include <ATen/ATen.h>

#include <zlib.h>

#include <map>

#include "engine/common/error.h"

namespace shardbench::checkpoint {

int64_t ParamPiece::global_numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<ParamPiece> PiecesOfUnsharded(model::LlamaForCausalLM& model) {
  std::vector<ParamPiece> out;
  for (auto& p : model.named_parameters()) {
    ParamPiece piece;
    piece.name = p.name;
    piece.shape = p.slot->sizes().vec();
    piece.numel = p.slot->numel();
    piece.replicated = true;
    piece.trainable = p.slot->requires_grad();
    piece.param = p.slot->detach().view({-1});
    piece.owner = *p.slot;
    out.push_back(std::move(piece));
  }
  return out;
}

std::vector<ParamPiece> PiecesOfFlat(model::LlamaForCausalLM& model, shard::FlatShardedModel& flat) {
  std::map<std::string, ParamPiece> by_name;
  for (const auto& unit : flat.units()) {
    const at::Tensor shard = unit->flat_shard().detach();
    const int64_t chunk_start = static_cast<int64_t>(unit->rank()) * unit->shard_numel();
    for (const auto& p : unit->params()) {
      const auto [start, length] = unit->local_range(p);
      ParamPiece piece;
      piece.name = p.name;
      piece.shape = p.shape;
      piece.begin = length > 0 ? chunk_start + start - p.offset : 0;
      piece.numel = length;
      piece.trainable = p.requires_grad;
      piece.param = shard.narrow(0, start, length);
      if (unit->options().use_orig_params) {
        piece.owner = p.orig;  // the optimizer holds the original, a 1-D view of exactly this range
      } else {
        piece.owner = unit->flat_shard();
        piece.owner_offset = start;
      }
      by_name[p.name] = std::move(piece);
    }
  }
  std::vector<ParamPiece> out;
  for (auto& p : model.named_parameters()) {
    auto it = by_name.find(p.name);
    if (it == by_name.end()) throw InfraError("flat engine: parameter '" + p.name + "' is in no unit");
    out.push_back(std::move(it->second));
  }
  return out;
}

std::vector<ParamPiece> PiecesOfPerParam(model::LlamaForCausalLM& model, shard::PerParamShardedModel& sharded) {
  std::map<std::string, ParamPiece> by_name;
  for (const auto& unit : sharded.units()) {
    for (auto& p : unit->params()) {
      ParamPiece piece;
      piece.name = p.name;
      piece.shape = p.shape;
      piece.begin = p.layout.first_row(unit->rank()) * p.layout.row_numel;
      piece.numel = p.sharded.numel();
      piece.trainable = p.requires_grad;
      piece.param = p.sharded.detach().view({-1});
      piece.owner = p.sharded;  // a row shard: the optimizer holds exactly this range
      by_name[p.name] = std::move(piece);
    }
  }
  std::vector<ParamPiece> out;
  for (auto& p : model.named_parameters()) out.push_back(std::move(by_name.at(p.name)));
  return out;
}

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
