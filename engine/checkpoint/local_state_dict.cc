// LOCAL: each rank's tensors exactly as its engine holds them (for the flat engine, one flat
// shard per unit under "<unit>._flat_param", never the original names as well, whatever
// use_orig_params says), its optimizer's state keyed by what the optimizer holds, and the
// layout that makes those bytes meaningful. A load compares layouts first and refuses any
// difference, naming it.
#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "engine/checkpoint/checkpoint_dir.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/state_dict_kinds.h"
#include "engine/common/error.h"
#include "engine/common/failpoints.h"
#include "engine/checkpoint/finite_values.h"

namespace shardbench::checkpoint {
namespace {

nlohmann::json Layout(const StateDictTarget& t) {
  nlohmann::json j = t.sharded_model->local_layout();
  j["engine"] = t.engine_name();
  j["world_size"] = t.world_size();
  return j;
}

// The first difference between the saved layout and ours, in words; "" when they match.
std::string LayoutDifference(const nlohmann::json& saved, const nlohmann::json& ours) {
  if (saved.value("world_size", -1) != ours["world_size"]) {
    return "saved at world size " + saved.value("world_size", nlohmann::json()).dump() + ", this job has " +
           ours["world_size"].dump() +
           " (a LOCAL checkpoint loads only at the same world size; use SHARDED to reshard)";
  }
  if (saved.value("engine", "") != ours["engine"]) {
    return "saved by engine " + saved.value("engine", nlohmann::json()).dump() + ", loading into " +
           ours["engine"].dump();
  }
  if (ours.contains("use_orig_params") && saved.value("use_orig_params", nlohmann::json()) != ours["use_orig_params"]) {
    return "saved with use_orig_params=" + saved.value("use_orig_params", nlohmann::json()).dump() +
           ", this model has " + ours["use_orig_params"].dump();
  }
  const char* list = ours.contains("units") ? "units" : "params";
  const nlohmann::json a = saved.value(list, nlohmann::json::array()), b = ours[list];
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size() || i >= b.size()) {
      return std::string("saved with ") + std::to_string(a.size()) + " " + list + ", this model has " +
             std::to_string(b.size()) + " (different wrapping)";
    }
    if (a[i] != b[i]) {
      return std::string(list) + "[" + std::to_string(i) + "] differs (wrapping or layout): saved " +
             a[i].dump().substr(0, 300) + ", here " + b[i].dump().substr(0, 300);
    }
  }
  return "";
}

}  // namespace

SaveReport SaveLocal(const StateDictTarget& target, const std::string& dir) {
  CheckpointWriter writer(dir, target.comm);
  const std::string file = RankFileName("local", target.rank(), target.world_size());
  SaveReport r;
  AgreeOnErrors(target.comm, [&] {
    const shard::LocalTensors local = target.sharded_model->local_tensors();
    std::vector<std::pair<std::string, at::Tensor>> tensors = local.params;
    for (const auto& [key, owner] : local.owners) {
      const optim::AdamWState* s = target.optimizer ? target.optimizer->find_state(owner) : nullptr;
      if (!s || !s->defined()) continue;
      tensors.push_back({StateKey(key, "exp_avg"), s->exp_avg});
      tensors.push_back({StateKey(key, "exp_avg_sq"), s->exp_avg_sq});
      tensors.push_back({StateKey(key, "step"), at::scalar_tensor(s->step, at::kLong)});
    }
    WriteSafetensors(writer.staging_path(file), tensors, {{"format", "pt"}});
    r.bytes_this_rank = static_cast<int64_t>(std::filesystem::file_size(writer.staging_path(file)));
  });
  Manifest m;
  m.kind = "local";
  m.world_size = target.world_size();
  m.content = {{"layout", Layout(target)},
               {"optimizer", target.optimizer ? OptimizerMeta(*target.optimizer) : nlohmann::json()}};
  r.bytes_total = writer.commit(m, {file});
  return r;
}

LoadReport LoadLocal(const StateDictTarget& target, const std::string& dir, LoadOptions options) {
  const Manifest m = OpenVerifiedCheckpoint(dir, "local", target.comm);
  LoadReport report;
  AgreeOnErrors(target.comm, [&] {
    const std::string diff = LayoutDifference(m.content.value("layout", nlohmann::json::object()), Layout(target));
    if (!diff.empty()) throw InputError("LOCAL checkpoint " + dir + " does not fit this model: " + diff);
    const bool with_state = target.optimizer && m.content.contains("optimizer") && !m.content["optimizer"].is_null();
    const auto file = SafetensorsFile::Open(dir + "/" + RankFileName("local", target.rank(), target.world_size()));
    const shard::LocalTensors local = target.sharded_model->local_tensors();
    std::vector<std::string> expected, present;
    for (const auto& [key, t] : local.params) expected.push_back(key);
    if (with_state) {
      for (const auto& [key, owner] : local.owners) {
        for (const char* what : {"exp_avg", "exp_avg_sq", "step"}) expected.push_back(StateKey(key, what));
      }
    }
    const bool drop_step = FailpointActive("optim_load_drop_step");
    for (const auto& k : file->names()) {
      const bool is_step = k.rfind("state.", 0) == 0 && k.size() > 5 && k.compare(k.size() - 5, 5, ".step") == 0;
      if (!(drop_step && is_step) && (with_state || k.rfind("state.", 0) != 0)) present.push_back(k);
    }
    ReconcileKeys(expected, present, dir, options, report);
    const std::set<std::string> has(present.begin(), present.end());
    auto read_into = [&](const std::string& key, const at::Tensor& dst) {
      const at::Tensor src = file->tensor(key);
      if (src.sizes() != dst.sizes() || src.scalar_type() != dst.scalar_type()) {
        throw InputError(file->path() + ": tensor '" + key + "' is " + c10::str(src.sizes()) + " " +
                         c10::toString(src.scalar_type()) + ", this rank holds " + c10::str(dst.sizes()) + " " +
                         c10::toString(dst.scalar_type()));
      }
      dst.copy_(src);
      RequireFiniteLoaded(dst, src, file->path(), key, src.sizes().vec());
      report.bytes_read += static_cast<int64_t>(src.nbytes());
    };
    bool shifted = !FailpointActive("local_load_shift");
    for (const auto& [key, t] : local.params) {
      if (!has.count(key)) continue;
      read_into(key, t);
      if (!shifted && t.numel() > 1) {  // the failpoint: one unit's shard lands one element off
        t.copy_(at::roll(t.clone(), 1));
        shifted = true;
      }
    }
    if (!with_state) return;
    for (const auto& [key, owner] : local.owners) {
      if (!has.count(StateKey(key, "exp_avg"))) continue;
      optim::AdamWState& s = target.optimizer->materialize_state(owner);
      read_into(StateKey(key, "exp_avg"), s.exp_avg);
      if (has.count(StateKey(key, "exp_avg_sq"))) read_into(StateKey(key, "exp_avg_sq"), s.exp_avg_sq);
      if (has.count(StateKey(key, "step"))) {
        s.step = file->tensor(StateKey(key, "step")).item<int64_t>();
        target.optimizer->sync_step_tensor(s);
      }
    }
    RestoreOptimizerMeta(*target.optimizer, m.content["optimizer"], dir, options);
  });
  return report;
}

}  // namespace shardbench::checkpoint
