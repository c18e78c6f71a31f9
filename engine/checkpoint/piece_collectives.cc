#include "engine/checkpoint/piece_collectives.h"

#include <ATen/ATen.h>

#include "engine/common/error.h"

namespace shardbench::checkpoint {

int64_t RankTable::begin(int r, size_t i) const { return t[r][i][0].item<int64_t>(); }
int64_t RankTable::numel(int r, size_t i) const { return t[r][i][1].item<int64_t>(); }
bool RankTable::has_state(int r, size_t i) const { return t[r][i][2].item<int64_t>() != 0; }
int64_t RankTable::step(int r, size_t i) const { return t[r][i][3].item<int64_t>(); }

RankTable GatherTable(const StateDictTarget& target, const std::vector<ParamPiece>& pieces) {
  const int64_t n = static_cast<int64_t>(pieces.size());
  at::Tensor mine = at::zeros({n, 4}, at::kLong);
  for (int64_t i = 0; i < n; ++i) {
    const auto& p = pieces[i];
    PieceState s;
    if (target.optimizer && p.trainable) s = StateOf(p, *target.optimizer);
    mine[i][0] = p.begin;
    mine[i][1] = p.numel;
    mine[i][2] = s.defined() ? 1 : 0;
    mine[i][3] = s.step;
  }
  if (!target.comm) return {mine.unsqueeze(0)};
  const auto dev = target.comm->device();
  at::Tensor all = at::empty({target.world_size() * n * 4}, at::TensorOptions().dtype(at::kLong).device(dev));
  target.comm->all_gather(all, mine.view({-1}).to(dev));
  return {all.cpu().view({target.world_size(), n, 4})};
}

at::Tensor GatherToRank0(const StateDictTarget& target, const ParamPiece& p, const RankTable& table, size_t i,
                         const at::Tensor& local) {
  const int rank = target.rank(), ws = target.world_size();
  // A replica (or one rank) already holds the whole tensor: rank 0 writes it in place.
  if (p.replicated || ws == 1) return rank == 0 ? local.cpu() : at::Tensor();
  std::vector<int64_t> counts;
  int64_t at = 0;
  for (int r = 0; r < ws; ++r) {
    const int64_t n = table.numel(r, i);
    if (n > 0 && table.begin(r, i) != at)
      throw InfraError("full state dict: the pieces of '" + p.name + "' do not tile it in rank order");
    counts.push_back(n);
    at += n;
  }
  if (at != p.global_numel())
    throw InfraError("full state dict: the ranks hold " + std::to_string(at) + " of '" + p.name + "''s " +
                     std::to_string(p.global_numel()) + " elements");
  at::Tensor full = at::empty({at}, local.options());
  target.comm->all_gather(full, local.contiguous(), counts);
  return rank == 0 ? full.cpu() : at::Tensor();
}

void SendFromRank0(const StateDictTarget& target, const ParamPiece& p, const RankTable& table, size_t i,
                   const at::Tensor& full, const at::Tensor& dst) {
  const int rank = target.rank(), ws = target.world_size();
  if (ws == 1) {
    dst.copy_(full.narrow(0, p.begin, p.numel));
    return;
  }
  const auto dev = target.comm->device();
  if (p.replicated) {
    at::Tensor buf = rank == 0 ? full.to(dev).contiguous() : at::empty({p.global_numel()}, dst.options().device(dev));
    target.comm->broadcast(buf, 0);
    dst.copy_(buf);
    return;
  }
  int64_t widest = 0;
  for (int r = 0; r < ws; ++r) widest = std::max(widest, table.numel(r, i));
  at::Tensor padded;
  if (rank == 0) {
    padded = at::zeros({ws * widest}, full.options());
    for (int r = 0; r < ws; ++r)
      padded.narrow(0, r * widest, table.numel(r, i)).copy_(full.narrow(0, table.begin(r, i), table.numel(r, i)));
    padded = padded.to(dev);
  }
  at::Tensor mine = at::empty({widest}, dst.options().device(dev));
  target.comm->scatter(mine, padded, 0);
  dst.copy_(mine.narrow(0, 0, p.numel));
}

}  // namespace shardbench::checkpoint
