#include "harness/memory_plan.h"

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <filesystem>

#include "engine/common/error.h"
#include "engine/common/path_checks.h"
#include "engine/shard/mixed_precision.h"
#include "harness/scenario/scenario_model.h"
#include "harness/engine_setup.h"
#include "harness/model_source.h"
#include "harness/scenario/engine_registry.h"

namespace shardbench {

namespace {

memory::MemoryModelInput LayoutInput(const Scenario& s, int rank) {
  memory::MemoryModelInput in;
  in.config = ScenarioModelConfig(s);
  in.lora = s.lora;
  // PyTorch's FSDP (the peers) is planned as the engine that follows its semantics.
  in.engine = EngineKindLike(s);
  in.policy = {s.sharding.wrap_policy, s.sharding.min_params};
  in.use_orig_params = s.sharding.use_orig_params;
  in.reshard_after_forward = s.sharding.reshard_after_forward;
  in.world_size = s.world_size;
  in.rank = rank;
  in.batch_size = s.train.batch_size;
  in.seq_len = s.train.seq_len;
  in.storage = StoragePolicyFor(s);
  if (IsDirectory(s.model)) {
    in.checkpoint = std::make_shared<const checkpoint::HfCheckpoint>(checkpoint::HfCheckpoint::Open(s.model));
  }
  in.param_dtype = MixedPrecisionFor(s).param_dtype;
  in.activation_checkpointing = s.activation_checkpointing;
  return in;
}

}  // namespace

memory::MemoryPrediction PlanScenarioMemory(const Scenario& s, int rank) { return memory::PredictMemory(LayoutInput(s, rank)); }

memory::CommPrediction PlanScenarioComm(const Scenario& s) {
  memory::CommModelInput in;
  in.layout = LayoutInput(s, 0);
  in.reduce_dtype = MixedPrecisionFor(s).reduce_dtype;
  in.micro_batches = s.train.grad_accumulation;
  in.clip_grad_norm = s.train.max_grad_norm > 0;
  return memory::PredictComm(in);
}

nlohmann::json PredictedVsMeasured(const memory::MemoryPrediction& p, const nlohmann::json& m) {
  // measured: null where the engine did not measure the figure (a peer's), never 0.
  auto row = [](int64_t predicted, std::optional<int64_t> measured, const char* measured_as) {
    nlohmann::json r = {{"predicted", predicted}, {"measured", measured ? nlohmann::json(*measured) : nlohmann::json(nullptr)},
                        {"measured_as", measured_as}};
    r["ratio"] = measured && *measured > 0 ? nlohmann::json(static_cast<double>(predicted) / static_cast<double>(*measured))
                                           : nlohmann::json(nullptr);
    return r;
  };
  auto in = [&](const char* map, const char* name) -> std::optional<int64_t> {
    if (!m.contains(map) || !m[map].contains(name)) return std::nullopt;
    return m[map][name].get<int64_t>();
  };
  using memory::Category;
  // The same category, predicted and measured, under its one name.
  auto held = [&](Category c) { return row(p.bytes.held[c], in("held", memory::CategoryName(c)), "engine tensors"); };
  auto peak = [&](Category c, const char* measured_as) {
    return row(p.bytes.peak[c], in("peak_by_category", memory::CategoryName(c)), measured_as);
  };
  const std::optional<int64_t> total =
      m.contains("peak_allocated") && !m["peak_allocated"].is_null() ? std::optional<int64_t>(m["peak_allocated"].get<int64_t>())
                                                                      : std::nullopt;
  return {{"rank", 0},
          {"params_sharded", held(Category::kParamsSharded)},
          {"params_unsharded_peak", peak(Category::kParamsUnsharded, "allocator peak (params_unsharded)")},
          {"grads", held(Category::kGrads)},
          {"optim_state", held(Category::kOptimState)},
          {"activations", peak(Category::kActivations, "allocator peak (activations), estimate")},
          {"total", row(p.total(), total, "allocator peak (all categories)")}};
}

void CheckFitsThisMachine(const Scenario& s, int ranks_here) {
  if (s.backend != Backend::kGloo) return;
  const model::LlamaConfig c = ScenarioModelConfig(s);
  const double shards = s.engine == Engine::kReference ? 1.0 : static_cast<double>(s.world_size);
  // Adapters train in fp32: weights, gradients and AdamW's two moments, 16 bytes a parameter.
  const double weights = (2.0 * static_cast<double>(c.parameter_count()) +
                          16.0 * static_cast<double>(model::LoraParameterCount(c, s.lora))) / shards;
  const double tokens = static_cast<double>(s.train.batch_size) * static_cast<double>(s.train.seq_len);
  const double activations =
      2.0 * tokens * (static_cast<double>(c.num_hidden_layers) * c.hidden_size + 3.0 * c.vocab_size);
  const double host = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double need = (weights + activations) * ranks_here;
  if (need <= host) return;
  char text[512];
  std::snprintf(text, sizeof(text),
                "%s: this run needs at least %.1f GiB per rank (weights %.1f GiB, activations %.1f GiB) x %d rank%s on "
                "this machine = %.1f GiB, more than its %.1f GiB: shrink the model, train.batch_size or train.seq_len "
                "(`shardbench plan` gives the full prediction)",
                s.source.empty() ? s.name.c_str() : s.source.c_str(), (weights + activations) / (1 << 30),
                weights / (1 << 30), activations / (1 << 30), ranks_here, ranks_here == 1 ? "" : "s",
                need / (1 << 30), host / (1 << 30));
  throw InputError(text);
}

}  // namespace shardbench
