// Rank-worker command for frozen parameters kept in the dtype they were loaded in: a tiny LoRA
// model whose base weights are stored bf16 next to fp32 adapters (no mixed-precision cast),
// sharded by the per-parameter engine (units mixing the two dtypes: a byte all-gather) or the
// flat engine (lora_separate: one dtype per flat unit), against the unsharded reference built
// the same way.
#include <ATen/ATen.h>

#include <cmath>

#include "engine/model/param_init.h"
#include "engine/model/storage_dtype.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/sharded_model.h"
#include "tests/ranks/worker_checks.h"
#include "tests/ranks/worker_parity.h"

namespace shardbench::worker {
namespace {

std::unique_ptr<model::LlamaForCausalLM> BuildStored(c10::ScalarType model_dtype) {
  auto m = std::make_unique<model::LlamaForCausalLM>(model::NamedLlamaConfig("tiny"), LoraFor(true),
                                                     at::TensorOptions().device(at::kMeta));
  model::ApplyStorageDtypes(*m, {model_dtype, /*upcast_all=*/false}, nullptr);
  model::MaterializeParameters(*m, {model::InitMaterializer(*m, 17), at::Device(at::kCPU)});
  model::MaterializeBuffers(*m, at::Device(at::kCPU));
  return m;
}

}  // namespace

// Exact: every gathered full parameter equals the reference's bit for bit, in its stored dtype;
// the per-param engine's gather of them moves exactly world x (padded rows x row bytes) per
// param; held bytes by dtype. Training: losses within 1e-3 of the reference (bf16 compute),
// frozen params bit for bit unchanged and still bf16, trainable ones fp32 and moved.
int FrozenBf16Check(const std::string& engine) {
  auto comm = ConnectFromEnv();
  const int64_t ws = comm ? comm->world_size() : 1;
  const std::string label = "[" + engine + " frozen bf16, ws=" + std::to_string(ws) + "]";
  auto m = BuildStored(at::kBFloat16), reference = BuildStored(at::kBFloat16);
  int64_t frozen_padded_bytes = 0, padded_bytes = 0;
  for (auto& p : m->named_parameters()) {
    const bool trainable = p.slot->requires_grad();
    Expect(p.slot->scalar_type() == (trainable ? at::kFloat : at::kBFloat16), label + " '" + p.name + "' stored as " +
                                                                                   c10::toString(p.slot->scalar_type()));
    const int64_t rows = p.slot->size(0), row_bytes = p.slot->numel() / rows * p.slot->element_size();
    const int64_t bytes = (rows + ws - 1) / ws * row_bytes;
    padded_bytes += bytes;
    if (!trainable) frozen_padded_bytes += bytes;
  }
  shard::EngineOptions options;
  options.kind = shard::ParseEngineKind(engine, "engine");
  options.policy = Policy(engine == "flat" ? "lora_separate" : "transformer_block");
  const std::unique_ptr<shard::ShardedModel> sharded = shard::MakeShardedModel(*m, comm.get(), options);
  train::GradientSync* sync = sharded.get();
  auto gather = [&] { return sharded->gather_full_params(); };
  const memory::MemoryRecord held = sharded->memory();
  int64_t held_total = 0;
  for (const auto& [dtype, bytes] : held.params_by_dtype) {
    Expect(dtype == at::kFloat || dtype == at::kBFloat16, label + " holds " + c10::toString(dtype) + " params");
    held_total += bytes;
  }
  Expect(held_total == held.held[memory::Category::kParamsSharded], label + " bytes by dtype do not add up to the sharded bytes");
  if (sharded->kind() == shard::EngineKind::kPerParam) {
    Expect(held.params_by_dtype.at(at::kBFloat16) == frozen_padded_bytes,
           label + " bf16 bytes held " + std::to_string(held.params_by_dtype.at(at::kBFloat16)) + ", expected " +
               std::to_string(frozen_padded_bytes));
  }

  if (comm) comm->reset_stats();
  auto initial = gather();
  if (sharded->kind() == shard::EngineKind::kPerParam && comm) {
    const comm::CommStats stats = comm->stats();
    const auto& ag = stats[size_t(comm::Collective::kAllGather)];
    Expect(ag.bytes == ws * padded_bytes, label + " full-parameter all-gather bytes " + std::to_string(ag.bytes) +
                                              ", expected " + std::to_string(ws * padded_bytes));
  }
  auto ref_params = reference->named_parameters();
  Expect(initial.size() == ref_params.size(), label + " gathered parameter count");
  for (size_t i = 0; i < initial.size() && i < ref_params.size(); ++i) {
    Expect(initial[i].second.scalar_type() == ref_params[i].slot->scalar_type(), label + " '" + initial[i].first + "' gathered as " + c10::toString(initial[i].second.scalar_type()));
    ExpectEqual(initial[i].second, *ref_params[i].slot, label + " initial '" + initial[i].first + "'");
  }

  const auto params = sharded->named_parameters();
  optim::AdamW opt(optim::MakeParamGroups(params, kLr, kWeightDecay, true));
  auto losses = TrainSharded(*m, *sync, opt, comm.get());
  auto ref_losses = TrainReference(*reference, static_cast<int>(ws), true);
  for (size_t s = 0; s < losses.size(); ++s) {
    Expect(std::isfinite(losses[s]) && std::abs(losses[s] - ref_losses[s]) <= 1e-3 * std::abs(ref_losses[s]),
           label + " loss step " + std::to_string(s) + ": " + std::to_string(losses[s]) + " vs reference " + std::to_string(ref_losses[s]));
  }
  auto trained = gather();
  double moved = 0;
  for (size_t i = 0; i < trained.size() && i < initial.size(); ++i) {
    const bool trainable = ref_params[i].slot->requires_grad();
    Expect(trained[i].second.scalar_type() == (trainable ? at::kFloat : at::kBFloat16), label + " '" + trained[i].first + "' dtype after training");
    if (!trainable) {
      ExpectEqual(trained[i].second, initial[i].second, label + " frozen '" + trained[i].first + "' changed");
    } else {
      moved = std::max(moved, (trained[i].second - initial[i].second).abs().max().item<double>());
      const double off = (trained[i].second - *ref_params[i].slot).abs().max().item<double>();
      Expect(off <= kLr * kSteps, label + " '" + trained[i].first + "' is " + std::to_string(off) + " from the reference");
    }
  }
  Expect(moved > 0.1 * kLr, label + " training barely moved the adapters: " + std::to_string(moved));
  if (comm) comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker
