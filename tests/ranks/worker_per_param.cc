// Rank-worker commands for the per-parameter (FSDP2) engine: parity with the unsharded
// reference, and exact communication and gradient bytes derived from the shapes alone.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>

#include "engine/common/error.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/shard/per_param_sharded_model.h"
#include "engine/train/data_parallel.h"
#include "engine/train/trainer.h"
#include "tests/ranks/worker_checks.h"
#include "tests/ranks/worker_parity.h"

namespace shardbench::worker {

int PerParamParity(const std::string& policy, bool reshard_after_forward, int64_t micro_batches, double max_grad_norm) {
  auto comm = ConnectFromEnv();
  const int world = comm ? comm->world_size() : 1;
  for (bool lora : {false, true}) {
    const double clip = lora ? max_grad_norm / 10 : max_grad_norm;  // LoRA's gradients are ~10x smaller
    const std::string label = "[per_param policy=" + policy + (lora ? " lora" : " full") +
                              (reshard_after_forward ? "" : " reshard_after_forward=false") +
                              " micro_batches=" + std::to_string(micro_batches) + " clip=" + std::to_string(clip) + "]";
    auto m = Build(lora);
    shard::PerParamShardedModel sharded(*m, comm.get(), {Policy(policy), true, reshard_after_forward});
    // Parameters keep their names under FSDP2: the same groups as the reference.
    optim::AdamW opt(optim::MakeParamGroups(sharded.named_parameters(), kLr, kWeightDecay, true));
    double min_norm = 1e300;
    auto losses = TrainSharded(*m, sharded, opt, comm.get(), micro_batches, clip, &min_norm);
    if (clip > 0) Expect(min_norm > clip, label + " clipping was not active on every step");
    auto gathered = sharded.gather_full_params();
    Expect(sharded.memory().held[memory::Category::kParamsUnsharded] == 0, label + " parameters left unsharded after the step");
    auto reference = Build(lora);
    auto ref_losses = TrainReference(*reference, world, true, clip);
    CompareWithReference(label, losses, ref_losses, gathered, *reference);
    ExpectTrainingMoved(label, lora, *reference);
  }
  if (comm) comm->barrier();
  return ExitCode();
}

// One measured step after a warmup step. From the shapes alone (rows padded to a multiple of
// the world size, per parameter): reduce-scatter input bytes = world x padded trainable bytes,
// once per unit with a trainable parameter (frozen ones never); all-gather output bytes =
// world x padded bytes of each unit, gathered for forward and again for backward (not the root);
// gradient bytes held = padded trainable bytes of this rank; no frozen parameter has a gradient.
int PerParamCommBytes(const std::string& policy) {
  auto comm = ConnectFromEnv();
  if (!comm) throw InputError("per-param-comm-bytes needs at least 2 ranks");
  const int64_t ws = comm->world_size();
  for (bool lora : {true, false}) {
    const std::string label = std::string("[per_param ") + policy + (lora ? " lora" : " full") + "]";
    auto m = Build(lora);
    int64_t units = 0, trainable_units = 0, gather_bytes = 0, root_gather_bytes = 0, reduce_bytes = 0;
    int64_t root_bytes = 0, largest_unit_bytes = 0;  // unsharded (real rows only)
    for (const auto& unit : shard::PlanUnits(*m, Policy(policy))) {
      int64_t unit_padded = 0, unit_trainable = 0, unit_full = 0;
      for (const auto& p : unit.params) {
        unit_full += p.slot->numel() * 4;
        const int64_t rows = p.slot->size(0), per_rank = (rows + ws - 1) / ws;
        const int64_t padded = per_rank * (p.slot->numel() / rows) * 4;
        unit_padded += padded;
        if (p.slot->requires_grad()) unit_trainable += padded;
      }
      ++units;
      trainable_units += unit_trainable > 0;
      gather_bytes += ws * unit_padded;
      if (unit.module == m.get()) {
        root_gather_bytes = ws * unit_padded;
        root_bytes = unit_full;
      } else {
        largest_unit_bytes = std::max(largest_unit_bytes, unit_full);
      }
      reduce_bytes += unit_trainable;
    }
    shard::PerParamShardedModel sharded(*m, comm.get(), {Policy(policy), true});
    optim::AdamW opt(optim::MakeParamGroups(sharded.named_parameters(), kLr, kWeightDecay, true));
    train::Trainer trainer(*m, opt, comm.get(), &sharded);
    model::SyntheticData data(3, m->config().vocab_size, kSeqLen);
    trainer.step(data.batch(0, comm->rank() * kBatch, kBatch));
    comm->reset_stats();
    sharded.reset_peaks();
    trainer.step(data.batch(1, comm->rank() * kBatch, kBatch));
    if (policy == "transformer_block") {
      // The root stays gathered through forward and backward; otherwise one layer at a time:
      // a layer frees its parameters before the one below gathers for its backward.
      Expect(sharded.memory().peak[memory::Category::kParamsUnsharded] == root_bytes + largest_unit_bytes,
             label + " unsharded peak " + std::to_string(sharded.memory().peak[memory::Category::kParamsUnsharded]) + ", expected root " +
                 std::to_string(root_bytes) + " + one layer " + std::to_string(largest_unit_bytes));
    }
    const auto stats = comm->stats();
    const auto& rs = stats[size_t(comm::Collective::kReduceScatter)];
    const auto& ag = stats[size_t(comm::Collective::kAllGather)];
    Expect(rs.count == trainable_units, label + " reduce-scatters " + std::to_string(rs.count) + ", expected one per unit with trainable params: " + std::to_string(trainable_units));
    Expect(rs.bytes == ws * reduce_bytes, label + " reduce-scatter bytes " + std::to_string(rs.bytes) + ", expected " + std::to_string(ws * reduce_bytes));
    // The trainer's loss all-reduce is not an all-gather; the all-gathers are the units'.
    Expect(ag.count == 2 * units - 1, label + " all-gathers " + std::to_string(ag.count) + ", expected " + std::to_string(2 * units - 1));
    Expect(ag.bytes == 2 * gather_bytes - root_gather_bytes, label + " all-gather bytes " + std::to_string(ag.bytes) + ", expected " + std::to_string(2 * gather_bytes - root_gather_bytes));
    Expect(sharded.memory().held[memory::Category::kGrads] == reduce_bytes, label + " gradient bytes " + std::to_string(sharded.memory().held[memory::Category::kGrads]) + ", expected " + std::to_string(reduce_bytes));
    for (auto& p : sharded.named_parameters()) {
      if (!p.slot->requires_grad()) Expect(!p.slot->grad().defined(), label + " frozen '" + p.name + "' has a gradient");
    }
  }
  comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker

namespace shardbench::worker {

// Activation checkpointing on every decoder layer against none, the same engine and batches:
// fp32 losses and final parameters equal bit for bit (the recomputed forward is the same
// computation), and the activations' allocator peak is lower.
int ActivationCheckpointingCheck(const std::string& engine, bool lora, const std::string& policy) {
  memory::InstallTrackingAllocator();
  auto comm = ConnectFromEnv();
  struct Outcome {
    std::vector<double> losses;
    std::vector<std::pair<std::string, at::Tensor>> params;
    int64_t activations_peak = 0;
  };
  auto run = [&](bool checkpointing) {
    auto m = Build(lora);
    for (auto& layer : m->model.layers) layer->set_checkpointing(checkpointing);
    shard::EngineOptions options;
    options.kind = shard::ParseEngineKind(engine, "engine");
    options.policy = Policy(policy);
    const std::unique_ptr<shard::ShardedModel> sharded = shard::MakeShardedModel(*m, comm.get(), options);
    train::GradientSync* sync = sharded.get();
    optim::AdamW opt(optim::MakeParamGroups(sharded->named_parameters(), kLr, kWeightDecay, true));
    memory::ResetPeaks();
    Outcome o;
    o.losses = TrainSharded(*m, *sync, opt, comm.get());
    o.activations_peak = memory::Snapshot().by_category.peak[memory::Category::kActivations];
    o.params = sharded->gather_full_params();
    if (sharded->kind() == shard::EngineKind::kReference) {
      for (auto& [name, t] : o.params) t = t.clone();  // the model itself is released with this run
    }
    return o;
  };
  const Outcome plain = run(false), checkpointed = run(true);
  const std::string tag = "[" + engine + (lora ? " lora " : " full ") + policy + " activation checkpointing]";
  Expect(plain.losses == checkpointed.losses, tag + " losses differ from the run without checkpointing");
  for (size_t i = 0; i < plain.params.size() && i < checkpointed.params.size(); ++i) {
    Expect(at::equal(plain.params[i].second, checkpointed.params[i].second), tag + " '" + plain.params[i].first + "' differs");
  }
  Expect(checkpointed.activations_peak < plain.activations_peak,
         tag + " activation peak " + std::to_string(checkpointed.activations_peak) + " is not below " +
             std::to_string(plain.activations_peak));
  std::printf("%s activation peak %lld -> %lld bytes\n", tag.c_str(), static_cast<long long>(plain.activations_peak),
              static_cast<long long>(checkpointed.activations_peak));
  if (comm) comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker

namespace shardbench::worker {

// Explicit prefetch against none, on either sharding engine: the same collectives in the same
// order (counts and bytes equal), the same losses bit for bit, and one more unit unsharded at
// the peak (root + two layers on the two-layer tiny model, exactly).
int PrefetchCheck(const std::string& engine) {
  auto comm = ConnectFromEnv();
  if (!comm) throw InputError("prefetch needs at least 2 ranks");
  const std::string tag = "[" + engine + " prefetch]";
  struct Outcome {
    std::vector<double> losses;
    comm::CommStats stats{};
    int64_t peak = 0;
  };
  int64_t root_bytes = 0, layers_bytes = 0, largest_layer = 0;
  // A unit's unsharded bytes: its params' real rows (per-param) or its padded flat buffer (flat).
  auto count_unit = [&](bool is_root, int64_t full) {
    if (is_root) {
      root_bytes = full;
    } else {
      layers_bytes += full;
      largest_layer = std::max(largest_layer, full);
    }
  };
  auto run = [&](bool prefetch) {
    auto m = Build(/*lora=*/true);
    std::unique_ptr<shard::FlatShardedModel> flat;
    std::unique_ptr<shard::PerParamShardedModel> per_param;
    train::GradientSync* sync = nullptr;
    std::vector<model::NamedTensor> params;
    const bool first = root_bytes == 0;
    if (engine == "flat") {
      shard::EngineOptions o{Policy("transformer_block"), true, true};
      o.forward_prefetch = o.backward_prefetch = prefetch;
      flat = std::make_unique<shard::FlatShardedModel>(*m, comm.get(), o);
      for (const auto& u : flat->units()) {
        if (first) count_unit(&u->module() == m.get(), u->padded_numel() * 4);
      }
      sync = flat.get();
      params = flat->named_parameters();
    } else {
      shard::EngineOptions o{Policy("transformer_block"), true, true, {}, {}, prefetch, prefetch};
      per_param = std::make_unique<shard::PerParamShardedModel>(*m, comm.get(), o);
      for (const auto& u : per_param->units()) {
        int64_t full = 0;
        for (const auto& p : u->params()) full += p.unsharded.numel() * 4;
        if (first) count_unit(&u->module() == m.get(), full);
      }
      sync = per_param.get();
      params = per_param->named_parameters();
    }
    optim::AdamW opt(optim::MakeParamGroups(params, kLr, kWeightDecay, true));
    train::Trainer trainer(*m, opt, comm.get(), sync);
    model::SyntheticData data(3, m->config().vocab_size, kSeqLen);
    auto reset_peaks = [&] { flat ? flat->reset_peaks() : per_param->reset_peaks(); };
    Outcome out;
    for (int64_t s = 0; s < kSteps; ++s) {
      if (s == 1) {  // the execution order is known from step 1 on: measure from there
        comm->reset_stats();
        reset_peaks();
      }
      out.losses.push_back(trainer.step(data.batch(s, comm->rank() * kBatch, kBatch)).loss);
    }
    out.stats = comm->stats();
    out.peak = flat ? flat->memory().peak[memory::Category::kParamsUnsharded] : per_param->memory().peak[memory::Category::kParamsUnsharded];
    return out;
  };
  const Outcome plain = run(false), prefetched = run(true);
  Expect(plain.losses == prefetched.losses, tag + " losses differ from no prefetch");
  for (size_t c = 0; c < plain.stats.size(); ++c) {
    Expect(plain.stats[c].count == prefetched.stats[c].count && plain.stats[c].bytes == prefetched.stats[c].bytes,
           tag + " " + comm::CollectiveName(static_cast<comm::Collective>(c)) + " counts or bytes differ");
  }
  Expect(plain.peak == root_bytes + largest_layer, tag + " without: unsharded peak " + std::to_string(plain.peak) +
                                                       ", expected root + one layer " + std::to_string(root_bytes + largest_layer));
  Expect(prefetched.peak == root_bytes + layers_bytes,
         tag + " with: unsharded peak " + std::to_string(prefetched.peak) + ", expected root + both layers " +
             std::to_string(root_bytes + layers_bytes));
  comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker
