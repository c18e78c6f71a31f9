// ADAPTER: only the LoRA weights, gathered from every rank, in PEFT's layout so
// `PeftModel.from_pretrained(base, dir)` reads them: adapter_model.safetensors with names
// "base_model.model.<name>" (PEFT drops the adapter name, "default", on save) and
// adapter_config.json. Loading reads the small file on every rank, each copying its elements.
#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "engine/checkpoint/checkpoint_dir.h"
#include "engine/checkpoint/hf_export.h"
#include "engine/checkpoint/piece_collectives.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/state_dict_kinds.h"
#include "engine/common/durable_file.h"
#include "engine/common/error.h"
#include "engine/common/failpoints.h"
#include "engine/checkpoint/finite_values.h"

namespace shardbench::checkpoint {
namespace {

constexpr const char* kPeftPrefix = "base_model.model.";

bool IsAdapter(const std::string& name) { return name.find(".lora_") != std::string::npos; }

}  // namespace

SaveReport SaveAdapter(const StateDictTarget& target, const std::string& dir) {
  if (!target.model().lora().enabled)
    throw InputError("adapter export: the model has no LoRA adapters (lora.enabled=false)");
  std::vector<ParamPiece> pieces;
  for (auto& p : target.pieces()) {
    if (IsAdapter(p.name)) pieces.push_back(std::move(p));
  }
  const RankTable table = GatherTable(target, pieces);
  CheckpointWriter writer(dir, target.comm);
  const bool rank0_only = FailpointActive("adapter_rank0_only");
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto& p = pieces[i];
    at::Tensor full;
    if (rank0_only) {  // the accelerate#4206 bug: rank 0 saves what it holds, zeros for the rest
      if (target.rank() == 0) {
        full = at::zeros({p.global_numel()}, p.param.options().device(at::kCPU));
        full.narrow(0, p.begin, p.numel).copy_(p.param);
      }
    } else {
      full = GatherToRank0(target, p, table, i, p.param);
    }
    if (full.defined()) tensors.push_back({kPeftPrefix + p.name, full.view(p.shape)});
  }
  SaveReport r;
  std::vector<std::string> files;
  AgreeOnErrors(target.comm, [&] {
    if (target.rank() == 0) {
      WriteSafetensors(writer.staging_path("adapter_model.safetensors"), tensors, {{"format", "pt"}});
      WriteFileAtomically(writer.staging_path("adapter_config.json"), PeftAdapterConfig(target.model().lora()).dump(2) + "\n");
      files = {"adapter_model.safetensors", "adapter_config.json"};
      for (const auto& f : files)
        r.bytes_this_rank += static_cast<int64_t>(std::filesystem::file_size(writer.staging_path(f)));
    }
  });
  Manifest m;
  m.kind = "adapter";
  m.world_size = target.world_size();
  m.content = {{"engine", target.engine_name()}};
  r.bytes_total = writer.commit(m, files);
  return r;
}

LoadReport LoadAdapter(const StateDictTarget& target, const std::string& dir, LoadOptions options) {
  const Manifest m = OpenVerifiedCheckpoint(dir, "adapter", target.comm);
  LoadReport report;
  AgreeOnErrors(target.comm, [&] {
    const model::LoraConfig& lora = target.model().lora();
    nlohmann::json cfg;
    try {
      std::ifstream in(dir + "/adapter_config.json");
      cfg = nlohmann::json::parse(in);
      if (!lora.enabled || cfg.at("r").get<int64_t>() != lora.r || cfg.at("lora_alpha").get<double>() != lora.alpha ||
          cfg.at("target_modules").get<std::vector<std::string>>() != lora.targets) {
        throw InputError(dir + "/adapter_config.json: r=" + cfg.at("r").dump() + " lora_alpha=" +
                         cfg.at("lora_alpha").dump() + " target_modules=" + cfg.at("target_modules").dump() +
                         " do not match this model's LoRA (enabled=" + (lora.enabled ? "true" : "false") +
                         ", r=" + std::to_string(lora.r) + ", alpha=" + std::to_string(lora.alpha) + ")");
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError(dir + "/adapter_config.json: malformed: " + e.what());
    }
    const auto file = SafetensorsFile::Open(dir + "/adapter_model.safetensors");
    std::vector<ParamPiece> pieces;
    std::vector<std::string> expected, present;
    for (auto& p : target.pieces()) {
      if (!IsAdapter(p.name)) continue;
      expected.push_back(p.name);
      pieces.push_back(std::move(p));
    }
    for (const auto& k : file->names())
      present.push_back(k.rfind(kPeftPrefix, 0) == 0 ? k.substr(std::string(kPeftPrefix).size()) : k);
    ReconcileKeys(expected, present, dir, options, report);
    for (const auto& p : pieces) {
      const std::string key = kPeftPrefix + p.name;
      if (!file->contains(key)) continue;
      const TensorInfo& info = file->info(key);
      if (info.shape != p.shape || info.dtype != p.param.scalar_type()) {
        throw InputError(file->path() + ": tensor '" + key + "' is " + c10::str(c10::IntArrayRef(info.shape)) +
                         ", the model expects " + c10::str(c10::IntArrayRef(p.shape)));
      }
      const at::Tensor src = file->tensor(key).view({-1}).narrow(0, p.begin, p.numel);
      p.param.copy_(src);
      RequireFiniteLoaded(p.param, src, file->path(), key, info.shape, p.begin);
      report.bytes_read += p.numel * static_cast<int64_t>(p.param.element_size());
    }
  });
  return report;
}

}  // namespace shardbench::checkpoint
