// SHARDED: every rank writes the elements it owns to its own file; the manifest's index says
// which file holds which element range of each tensor. No collective moves tensor data, on
// save or on load.
#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "engine/checkpoint/checkpoint_dir.h"
#include "engine/checkpoint/piece_index.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/state_dict_kinds.h"
#include "engine/comm/gather_strings.h"
#include "engine/common/failpoints.h"

namespace shardbench::checkpoint {
SaveReport SaveSharded(const StateDictTarget& target, const std::string& dir) {
  const int rank = target.rank(), ws = target.world_size();
  const auto pieces = target.pieces();
  CheckpointWriter writer(dir, target.comm);
  const std::string file = RankFileName("shard", rank, ws);
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  PieceIndex index;
  nlohmann::json begins = nlohmann::json::object();  // kPieceBeginsMetadata: where each piece begins
  auto put = [&](const std::string& key, const std::vector<int64_t>& shape, const at::Tensor& t, int64_t begin) {
    tensors.push_back({key, t});
    index.add(key, shape, t.scalar_type(), file, begin, t.numel());
    begins[key] = begin;
  };
  SaveReport r;
  AgreeOnErrors(target.comm, [&] {
    for (const auto& p : pieces) {
      const auto [begin, numel] = OwnedRange(p, rank, ws);
      if (numel == 0) continue;
      const int64_t at = begin - p.begin;  // within this rank's piece
      put(p.name, p.shape, p.param.narrow(0, at, numel), begin);
      if (!target.optimizer || !p.trainable) continue;
      const PieceState s = StateOf(p, *target.optimizer);
      if (!s.defined()) continue;
      put(StateKey(p.name, "exp_avg"), p.shape, s.exp_avg.narrow(0, at, numel), begin);
      put(StateKey(p.name, "exp_avg_sq"), p.shape, s.exp_avg_sq.narrow(0, at, numel), begin);
      put(StateKey(p.name, "step"), {}, at::scalar_tensor(s.step, at::kLong), 0);
    }
    WriteSafetensors(writer.staging_path(file), tensors, {{"format", "pt"}, {kPieceBeginsMetadata, begins.dump()}});
    r.bytes_this_rank = static_cast<int64_t>(std::filesystem::file_size(writer.staging_path(file)));
  });
  PieceIndex merged;
  for (const auto& text : comm::AllGatherStrings(target.comm, index.to_json().dump())) {
    merged.merge(PieceIndex::FromJson(nlohmann::json::parse(text), "rank index"));
  }
  Manifest m;
  m.kind = "sharded";
  m.world_size = ws;
  m.content = {{"engine", target.engine_name()},
               {"tensors", merged.to_json()},
               {"optimizer", target.optimizer ? OptimizerMeta(*target.optimizer) : nlohmann::json()}};
  r.bytes_total = writer.commit(m, {file});
  return r;
}

LoadReport LoadSharded(const StateDictTarget& target, const std::string& dir, LoadOptions options) {
  const Manifest m = OpenVerifiedCheckpoint(dir, "sharded", target.comm);
  PieceReader reader(dir, PieceIndex::FromJson(m.content.value("tensors", nlohmann::json()), dir + "/manifest.json"));
  const auto pieces = target.pieces();
  const bool with_state = target.optimizer && m.content.contains("optimizer") && !m.content["optimizer"].is_null();
  LoadReport report;
  AgreeOnErrors(target.comm, [&] {
    const bool drop_step = FailpointActive("optim_load_drop_step");
    std::vector<std::string> present;
    for (const auto& [key, entry] : reader.index().entries()) {
      const bool is_step =
          key.size() > 5 && key.compare(key.size() - 5, 5, ".step") == 0 && key.rfind("state.", 0) == 0;
      if (!(drop_step && is_step)) present.push_back(key);
    }
    ReconcileKeys(ExpectedKeys(pieces, with_state), present, dir, options, report);
    const std::set<std::string> present_set(present.begin(), present.end());
    auto has = [&](const std::string& key) { return present_set.count(key) != 0; };
    for (const auto& p : pieces) {
      if (has(p.name) && p.numel > 0) reader.read(p.name, p.shape, p.begin, p.param);
      if (!with_state || !p.trainable || !has(StateKey(p.name, "exp_avg"))) continue;
      const PieceState s = MaterializedStateOf(p, *target.optimizer);
      if (p.numel > 0) {
        reader.read(StateKey(p.name, "exp_avg"), p.shape, p.begin, s.exp_avg);
        if (has(StateKey(p.name, "exp_avg_sq")))
          reader.read(StateKey(p.name, "exp_avg_sq"), p.shape, p.begin, s.exp_avg_sq);
      }
      if (has(StateKey(p.name, "step"))) {
        at::Tensor step = at::empty({1}, at::kLong);
        reader.read(StateKey(p.name, "step"), {}, 0, step);
        SetStep(p, *target.optimizer, step.item<int64_t>());
      }
    }
    if (with_state) RestoreOptimizerMeta(*target.optimizer, m.content["optimizer"], dir, options);
    report.bytes_read = reader.bytes_read();
  });
  return report;
}

}  // namespace shardbench::checkpoint
