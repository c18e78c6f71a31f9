// FULL: gathered to rank 0 and written there as a Hugging Face directory (config.json +
// model.safetensors) plus optimizer.safetensors; loaded by rank 0 alone, which sends each
// rank only its elements (scatter; broadcast for an unsharded replica). One parameter is in
// flight at a time on the non-zero ranks; rank 0 holds the whole model on the host while it
// writes (PyTorch's rank0_only + offload_to_cpu), which the save's peak-memory metric shows.
#include <ATen/ATen.h>

#include <filesystem>
#include <set>

#include "engine/checkpoint/checkpoint_dir.h"
#include "engine/checkpoint/piece_collectives.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/state_dict_kinds.h"
#include "engine/comm/gather_strings.h"
#include "engine/common/error.h"
#include "engine/common/failpoints.h"

namespace shardbench::checkpoint {
SaveReport SaveFull(const StateDictTarget& target, const std::string& dir) {
  const auto pieces = target.pieces();
  const RankTable table = GatherTable(target, pieces);
  CheckpointWriter writer(dir, target.comm);
  std::vector<std::pair<std::string, at::Tensor>> params, state;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto& p = pieces[i];
    at::Tensor full = GatherToRank0(target, p, table, i, p.param);
    if (full.defined()) params.push_back({p.name, full.view(p.shape)});
    // State is saved when any rank has it; a rank without (never saw a gradient) sends zeros.
    int64_t step = 0;
    bool any_state = false;
    for (int r = 0; r < target.world_size(); ++r) {
      if (table.has_state(r, i)) step = std::max(step, table.step(r, i)), any_state = true;
    }
    if (!any_state) continue;
    const PieceState s = StateOf(p, *target.optimizer);
    for (auto [what, local] : {std::make_pair("exp_avg", s.exp_avg), std::make_pair("exp_avg_sq", s.exp_avg_sq)}) {
      if (!local.defined()) local = at::zeros({p.numel}, p.param.options());
      at::Tensor t = GatherToRank0(target, p, table, i, local);
      if (t.defined()) state.push_back({StateKey(p.name, what), t.view(p.shape)});
    }
    if (target.rank() == 0) state.push_back({StateKey(p.name, "step"), at::scalar_tensor(step, at::kLong)});
  }
  std::vector<std::string> files;
  SaveReport r;
  AgreeOnErrors(target.comm, [&] {
    if (target.rank() == 0) {
      model::WriteHfLlamaConfig(target.model().config(), writer.staging_path("config.json"));
      WriteSafetensors(writer.staging_path("model.safetensors"), params, {{"format", "pt"}});
      files = {"config.json", "model.safetensors"};
      if (target.optimizer) {
        WriteSafetensors(writer.staging_path("optimizer.safetensors"), state, {{"format", "pt"}});
        files.push_back("optimizer.safetensors");
      }
      for (const auto& f : files)
        r.bytes_this_rank += static_cast<int64_t>(std::filesystem::file_size(writer.staging_path(f)));
    }
  });
  Manifest m;
  m.kind = "full";
  m.world_size = target.world_size();
  m.content = {{"engine", target.engine_name()},
               {"optimizer", target.optimizer ? OptimizerMeta(*target.optimizer) : nlohmann::json()}};
  r.bytes_total = writer.commit(m, files);
  return r;
}

LoadReport LoadFull(const StateDictTarget& target, const std::string& dir, LoadOptions options) {
  const Manifest m = OpenVerifiedCheckpoint(dir, "full", target.comm);
  const bool with_state = target.optimizer && m.content.contains("optimizer") && !m.content["optimizer"].is_null();
  const auto pieces = target.pieces();
  const RankTable table = GatherTable(target, pieces);
  const bool reader = target.rank() == 0;
  std::shared_ptr<SafetensorsFile> model_file, state_file;
  // Rank 0 opens and checks everything before any collective, so a bad file fails every rank
  // at once with rank 0's message instead of leaving the others waiting in a scatter.
  nlohmann::json opened = {{"keys", nlohmann::json::array()}, {"error", ""}};
  if (reader) {
    try {
      model_file = SafetensorsFile::Open(dir + "/model.safetensors");
      for (const auto& k : model_file->names()) opened["keys"].push_back(k);
      if (with_state) {
        state_file = SafetensorsFile::Open(dir + "/optimizer.safetensors");
        for (const auto& k : state_file->names()) {
          const bool is_step = k.size() > 5 && k.compare(k.size() - 5, 5, ".step") == 0;
          if (!(is_step && FailpointActive("optim_load_drop_step"))) opened["keys"].push_back(k);
        }
      }
      for (const auto& p : pieces) {
        for (const auto& [file, key] :
             {std::make_pair(model_file, p.name), std::make_pair(state_file, StateKey(p.name, "exp_avg")),
              std::make_pair(state_file, StateKey(p.name, "exp_avg_sq"))}) {
          if (!file || !file->contains(key)) continue;
          const TensorInfo& info = file->info(key);
          if (info.shape != p.shape || info.dtype != p.param.scalar_type()) {
            throw InputError(file->path() + ": tensor '" + key + "' is " + DtypeCode(info.dtype, key) + " " +
                             c10::str(c10::IntArrayRef(info.shape)) + ", the model holds " +
                             DtypeCode(p.param.scalar_type(), key) + " " + c10::str(c10::IntArrayRef(p.shape)));
          }
        }
      }
    } catch (const Error& e) {
      opened["error"] = e.what();
    }
  }
  const nlohmann::json shared = nlohmann::json::parse(comm::AllGatherStrings(target.comm, opened.dump())[0]);
  if (!shared["error"].get<std::string>().empty()) throw InputError(shared["error"].get<std::string>());
  const std::vector<std::string> keys = shared["keys"];
  const std::set<std::string> has(keys.begin(), keys.end());
  LoadReport report;
  ReconcileKeys(ExpectedKeys(pieces, with_state), keys, dir, options, report);
  auto read_full = [&](const SafetensorsFile* f, const std::string& key) {
    if (!reader) return at::Tensor();
    const TensorInfo& info = f->info(key);
    report.bytes_read += static_cast<int64_t>(info.end - info.begin);
    return f->tensor(key).view({-1});
  };
  at::Tensor steps = at::zeros({static_cast<int64_t>(pieces.size())}, at::kLong);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto& p = pieces[i];
    if (has.count(p.name)) SendFromRank0(target, p, table, i, read_full(model_file.get(), p.name), p.param);
    if (!with_state || !p.trainable || !has.count(StateKey(p.name, "exp_avg"))) continue;
    const PieceState s = MaterializedStateOf(p, *target.optimizer);
    SendFromRank0(target, p, table, i, read_full(state_file.get(), StateKey(p.name, "exp_avg")), s.exp_avg);
    if (has.count(StateKey(p.name, "exp_avg_sq"))) {
      SendFromRank0(target, p, table, i, read_full(state_file.get(), StateKey(p.name, "exp_avg_sq")), s.exp_avg_sq);
    }
    if (reader && has.count(StateKey(p.name, "step")))
      steps[i] = state_file->tensor(StateKey(p.name, "step")).item<int64_t>();
  }
  if (with_state) {
    if (target.comm) {
      at::Tensor buf = steps.to(target.comm->device());
      target.comm->broadcast(buf, 0);
      steps = buf.cpu();
    }
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (pieces[i].trainable && has.count(StateKey(pieces[i].name, "step"))) {
        SetStep(pieces[i], *target.optimizer, steps[i].item<int64_t>());
      }
    }
    RestoreOptimizerMeta(*target.optimizer, m.content["optimizer"], dir, options);
  }
  return report;
}

}  // namespace shardbench::checkpoint
