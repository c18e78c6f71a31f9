#include "harness/memory_plan.h"

#include <filesystem>

#include "engine/shard/mixed_precision.h"
#include "harness/scenario/scenario_model.h"
#include "harness/engine_setup.h"
#include "harness/model_source.h"

namespace shardbench {

namespace {

memory::MemoryModelInput LayoutInput(const Scenario& s, int rank) {
  memory::MemoryModelInput in;
  in.config = ScenarioModelConfig(s);
  in.lora = s.lora;
  // PyTorch's FSDP (the peers) is planned as the engine that follows its semantics.
  in.engine = EngineKindLike(s.engine);
  in.policy = {s.sharding.wrap_policy, s.sharding.min_params};
  in.use_orig_params = s.sharding.use_orig_params;
  in.reshard_after_forward = s.sharding.reshard_after_forward;
  in.world_size = s.world_size;
  in.rank = rank;
  in.batch_size = s.train.batch_size;
  in.seq_len = s.train.seq_len;
  in.storage = StoragePolicyFor(s);
  if (std::filesystem::is_directory(s.model)) {
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
  auto row = [](int64_t predicted, int64_t measured, const char* measured_as) {
    nlohmann::json r = {{"predicted", predicted}, {"measured", measured}, {"measured_as", measured_as}};
    r["ratio"] = measured > 0 ? nlohmann::json(static_cast<double>(predicted) / static_cast<double>(measured))
                              : nlohmann::json(nullptr);
    return r;
  };
  using memory::Category;
  // The same category, predicted and measured, under its one name.
  auto held = [&](Category c) {
    const char* name = memory::CategoryName(c);
    return row(p.bytes.held[c], m["held"].value(name, int64_t{0}), "engine tensors");
  };
  auto peak = [&](Category c, const char* measured_as) {
    const char* name = memory::CategoryName(c);
    return row(p.bytes.peak[c], m["peak_by_category"].value(name, int64_t{0}), measured_as);
  };
  return {{"rank", 0},
          {"params_sharded", held(Category::kParamsSharded)},
          {"params_unsharded_peak", peak(Category::kParamsUnsharded, "allocator peak (params_unsharded)")},
          {"grads", held(Category::kGrads)},
          {"optim_state", held(Category::kOptimState)},
          {"activations", peak(Category::kActivations, "allocator peak (activations), estimate")},
          {"total", row(p.total(), m["peak_allocated"].is_null() ? 0 : m["peak_allocated"].get<int64_t>(),
                        "allocator peak (all categories)")}};
}

}  // namespace shardbench
