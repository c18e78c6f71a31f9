#include "engine/model/hf_weights.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <filesystem>
#include <set>

#include "engine/common/error.h"
#include "engine/common/path_checks.h"
#include "engine/checkpoint/finite_values.h"

namespace shardbench::model {

LoadReport LoadHfWeights(LlamaForCausalLM& model, const checkpoint::HfCheckpoint& ckpt) {
  LoadReport report;
  std::set<std::string> wanted;
  std::vector<std::string> missing;
  c10::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    // Adapters are not in a base checkpoint (they keep their init) but are in a full state
    // dict of a LoRA model, which restores them.
    const bool adapter = p.name.find(".lora_") != std::string::npos;
    if (adapter && !ckpt.contains(p.name)) continue;
    wanted.insert(p.name);
    if (!ckpt.contains(p.name)) {
      missing.push_back(p.name);
      continue;
    }
    const auto& info = ckpt.info(p.name);
    if (c10::IntArrayRef(info.shape) != p.slot->sizes()) {
      throw InputError(ckpt.dir() + ": tensor '" + p.name + "' has shape " + c10::str(c10::IntArrayRef(info.shape)) +
                       " but the model (from config.json) expects " + c10::str(p.slot->sizes()));
    }
    at::Tensor src = ckpt.tensor(p.name);
    p.slot->copy_(src);
    checkpoint::RequireFiniteLoaded(*p.slot, src, ckpt.path_of(p.name), p.name, info.shape);
    report.tensors_loaded += 1;
    report.bytes_read += static_cast<int64_t>(info.end - info.begin);
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 5) list += ", ... (" + std::to_string(missing.size()) + " in all)";
    throw InputError(ckpt.dir() + ": checkpoint lacks model parameters: " + list);
  }
  for (const auto& name : ckpt.names()) {
    if (!wanted.count(name)) report.unexpected.push_back(name);
  }
  return report;
}

ParamMaterializer CheckpointMaterializer(std::shared_ptr<const checkpoint::HfCheckpoint> ckpt, ParamMaterializer fallback,
                                         std::shared_ptr<LoadReport> report) {
  return [ckpt, fallback, report](const std::string& name, const at::Tensor& dst, int64_t begin) {
    if (!ckpt->contains(name)) {
      if (name.find(".lora_") == std::string::npos) {
        throw InputError(ckpt->dir() + ": checkpoint lacks model parameter '" + name + "'");
      }
      fallback(name, dst, begin);  // adapters keep their own init over a base checkpoint
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto& info = ckpt->info(name);
    const int64_t n = dst.numel();
    if (begin < 0 || begin + n > info.numel()) {
      throw InputError(ckpt->dir() + ": tensor '" + name + "' has " + std::to_string(info.numel()) +
                       " elements; the model needs elements [" + std::to_string(begin) + ", " + std::to_string(begin + n) +
                       ") (config.json and weights disagree)");
    }
    c10::NoGradGuard no_grad;
    const at::Tensor src = ckpt->tensor(name).view({-1}).narrow(0, begin, n);  // touches only these pages of the mapping
    dst.copy_(src.view(dst.sizes()));
    checkpoint::RequireFiniteLoaded(dst, src, ckpt->path_of(name), name, info.shape, begin);
    report->bytes_read += n * static_cast<int64_t>(c10::elementSize(info.dtype));
    if (begin == 0) report->tensors_loaded += 1;
    report->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
}

std::unique_ptr<LlamaForCausalLM> BuildLlamaFromSource(const std::string& source, const LoraConfig& lora,
                                                       uint64_t seed, const at::TensorOptions& options,
                                                       LoadReport* report) {
  if (!IsDirectory(source)) return BuildInitializedLlama(NamedLlamaConfig(source), lora, seed, options);
  const LlamaConfig config = LoadHfLlamaConfig((std::filesystem::path(source) / "config.json").string());
  auto ckpt = checkpoint::HfCheckpoint::Open(source);
  // Initialise everything first (adapters need their own init), then overwrite the base.
  auto model = BuildInitializedLlama(config, lora, seed, options);
  const auto start = std::chrono::steady_clock::now();
  LoadReport r = LoadHfWeights(*model, ckpt);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report) *report = r;
  return model;
}

}  // namespace shardbench::model
