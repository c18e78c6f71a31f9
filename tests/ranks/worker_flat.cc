// Rank-worker commands for the flat-parameter (FSDP1) engine: parity with the unsharded
// reference, optimizers built before wrapping, and exact gradient bytes.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "engine/comm/create_communicator.h"
#include "engine/common/error.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/train/trainer.h"
#include "tests/ranks/worker_checks.h"
#include "tests/ranks/worker_parity.h"

namespace shardbench::worker {
namespace {

struct Case {
  bool use_orig_params, lora;
  std::string policy;
  bool reshard_after_forward = true;
  int64_t micro_batches = 1;  // gradient accumulation: kBatch samples split into this many
  double max_grad_norm = 0;   // > 0: clip by global norm (all-reduced across shards)
  std::string label() const {
    return "[policy=" + policy + " use_orig_params=" + (use_orig_params ? "true" : "false") + (lora ? " lora" : " full") +
           (reshard_after_forward ? "" : " reshard_after_forward=false") +
           (micro_batches > 1 ? " micro_batches=" + std::to_string(micro_batches) : "") +
           (max_grad_norm > 0 ? " max_grad_norm=" + std::to_string(max_grad_norm) : "") + "]";
  }
};

void RunParityCase(Case c, comm::Communicator* comm) {
  // LoRA's gradients are about 10x smaller than a full fine-tune's: keep clipping active.
  if (c.lora) c.max_grad_norm /= 10;
  const int world = comm ? comm->world_size() : 1;
  auto m = Build(c.lora);
  shard::EngineOptions opts{Policy(c.policy), c.use_orig_params, c.reshard_after_forward};
  const bool mixed_unit = c.lora && !c.use_orig_params && c.policy != "lora_separate";
  if (mixed_unit) {
    try {
      shard::FlatShardedModel sharded(*m, comm, opts);
      Expect(false, c.label() + " accepted a unit mixing frozen and trainable params");
    } catch (const InputError& e) {
      Expect(std::string(e.what()).rfind("Must flatten tensors with uniform requires_grad when use_orig_params=False", 0) == 0,
             c.label() + " wrong error: " + e.what());
    }
    return;
  }
  // use_orig_params=false exposes one flat param per unit: no per-norm groups, so the
  // reference decays norms too.
  const bool no_decay_on_norms = c.use_orig_params;
  shard::FlatShardedModel sharded(*m, comm, opts);
  optim::AdamW opt(optim::MakeParamGroups(sharded.named_parameters(), kLr, kWeightDecay, no_decay_on_norms));
  double min_norm = 1e300;
  auto losses = TrainSharded(*m, sharded, opt, comm, c.micro_batches, c.max_grad_norm, &min_norm);
  if (c.max_grad_norm > 0) {
    Expect(min_norm > c.max_grad_norm, c.label() + " clipping was not active on every step (smallest norm " +
                                           std::to_string(min_norm) + ")");
  }
  auto gathered = sharded.gather_full_params();
  auto reference = Build(c.lora);
  auto ref_losses = TrainReference(*reference, world, no_decay_on_norms, c.max_grad_norm);
  CompareWithReference(c.label(), losses, ref_losses, gathered, *reference);
  ExpectTrainingMoved(c.label(), c.lora, *reference);
}

int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

}  // namespace

int FlatParity(const std::string& policy, bool reshard_after_forward, int64_t micro_batches, double max_grad_norm) {
  auto comm = ConnectFromEnv();
  for (bool orig : {true, false}) {
    for (bool lora : {false, true}) {
      RunParityCase({orig, lora, policy, reshard_after_forward, micro_batches, max_grad_norm}, comm.get());
    }
  }
  if (comm) comm->barrier();
  return ExitCode();
}

// An optimizer built before wrapping holds the original parameter objects. With
// use_orig_params=true they stay the model's parameters and train exactly like the reference
// with the same groups; with use_orig_params=false they are orphaned: the run completes and the
// parameters never change (PyTorch's silent behaviour, which the harness's learning check turns red).
int FlatOptimizerBeforeWrap(bool use_orig_params) {
  auto comm = ConnectFromEnv();
  const int world = comm ? comm->world_size() : 1;
  const std::string label = std::string("[optimizer before wrap, use_orig_params=") + (use_orig_params ? "true]" : "false]");
  auto m = Build(/*lora=*/false);
  std::vector<at::Tensor> initial;
  for (auto& p : m->named_parameters()) initial.push_back(p.slot->detach().clone());
  optim::AdamW opt(optim::MakeParamGroups(*m, kLr, kWeightDecay, /*no_decay_on_norms=*/true));
  Expect(opt.groups().size() == 2, label + " two parameter groups");
  shard::FlatShardedModel sharded(*m, comm.get(), {Policy("transformer_block"), use_orig_params, true});
  auto losses = TrainSharded(*m, sharded, opt, comm.get());
  auto gathered = sharded.gather_full_params();
  if (use_orig_params) {
    auto reference = Build(false);
    auto ref_losses = TrainReference(*reference, world, /*no_decay_on_norms=*/true);
    CompareWithReference(label, losses, ref_losses, gathered, *reference);
  } else {
    for (size_t i = 0; i < gathered.size(); ++i) {
      Expect(at::equal(gathered[i].second, initial[i]), label + " " + gathered[i].first + " changed");
    }
    // Nothing trains: every step's loss is the untrained model's on that step's global batch.
    auto untrained = Build(false);
    model::SyntheticData data(3, untrained->config().vocab_size, kSeqLen);
    c10::NoGradGuard no_grad;
    for (size_t s = 0; s < losses.size(); ++s) {
      const model::Batch global = data.batch(static_cast<int64_t>(s), 0, kBatch * world);
      const double want = untrained->loss(global.input_ids, global.labels).item<double>();
      Expect(std::abs(losses[s] - want) <= 1e-5 * std::abs(want),
             label + " step " + std::to_string(s) + " loss " + std::to_string(losses[s]) + " is not the untrained " +
                 std::to_string(want) + ": something trained");
    }
  }
  if (comm) comm->barrier();
  return ExitCode();
}

// Exact sharded gradient bytes per rank with LoRA and use_orig_params=true, computed here from
// the shapes alone: transformer_block puts frozen and trainable params in one unit, so each
// layer's gradient covers its whole padded flat buffer (16-byte aligned params); lora_separate
// gives adapters their own units, so gradients cover only the padded trainable params.
int FlatGradBytes(const std::string& policy) {
  auto comm = ConnectFromEnv();
  const int world = comm ? comm->world_size() : 1;
  auto m = Build(/*lora=*/true);
  int64_t expected = 0;
  for (auto* layer : m->decoder_layers()) {
    if (policy == "transformer_block") {
      int64_t offset = 0;
      for (auto& p : layer->named_parameters()) offset = RoundUp(offset, 4) + p.slot->numel();
      expected += RoundUp(offset, world) / world * 4;
    } else {
      for (auto& p : layer->named_parameters()) {
        if (p.slot->requires_grad()) expected += RoundUp(p.slot->numel(), world) / world * 4;
      }
    }
  }
  shard::FlatShardedModel sharded(*m, comm.get(), {Policy(policy), true, true});
  optim::AdamW opt(optim::MakeParamGroups(sharded.named_parameters(), kLr, 0.0, true));
  TrainSharded(*m, sharded, opt, comm.get());
  const memory::MemoryRecord b = sharded.memory();
  Expect(b.held[memory::Category::kGrads] == expected, "[" + policy + "] sharded grad bytes " + std::to_string(b.held[memory::Category::kGrads]) +
                                          ", expected " + std::to_string(expected));
  Expect(b.held[memory::Category::kParamsUnsharded] == 0, "[" + policy + "] unsharded bytes left after the step: " + std::to_string(b.held[memory::Category::kParamsUnsharded]));
  // One unit's full gradient at a time awaits its reduce-scatter: the largest trainable unit's.
  int64_t largest_trainable = 0;
  for (const auto& u : sharded.units()) {
    if (u->requires_grad()) largest_trainable = std::max(largest_trainable, u->padded_numel() * 4);
  }
  Expect(b.peak[memory::Category::kGrads] == largest_trainable, "[" + policy + "] unsharded grad peak " +
                                                          std::to_string(b.peak[memory::Category::kGrads]) + ", expected " +
                                                          std::to_string(largest_trainable));
  if (comm) comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker

namespace shardbench::worker {

// Unsharded buffers are freed as soon as a unit's backward is over, frozen units included
// (their reshard-only input hook): with 6 layers the peak stays below the root plus two
// layers' buffers plus every adapter's, instead of growing to the whole model.
int FlatUnshardedPeak(const std::string& policy) {
  auto comm = ConnectFromEnv();
  const int world = comm ? comm->world_size() : 1;
  auto config = model::NamedLlamaConfig("tiny");
  config.num_hidden_layers = 6;
  auto m = model::BuildInitializedLlama(config, LoraFor(true), 17, at::TensorOptions());
  shard::FlatShardedModel sharded(*m, comm.get(), {Policy(policy), true, true});
  int64_t root = 0, largest_layer = 0, adapters = 0;
  for (auto& u : sharded.units()) {
    const int64_t bytes = u->padded_numel() * 4;
    if (u->path().empty()) root = bytes;
    else if (u->path().find("lora_") != std::string::npos) adapters += bytes;
    else largest_layer = std::max(largest_layer, bytes);
  }
  optim::AdamW opt(optim::MakeParamGroups(sharded.named_parameters(), kLr, 0.0, true));
  TrainSharded(*m, sharded, opt, comm.get());
  const int64_t peak = sharded.memory().peak[memory::Category::kParamsUnsharded];
  const int64_t bound = root + 2 * largest_layer + adapters;
  Expect(peak > root, "[" + policy + "] peak " + std::to_string(peak) + " not above the root's " + std::to_string(root));
  Expect(peak <= bound, "[" + policy + "] unsharded peak " + std::to_string(peak) + " bytes exceeds root + 2 layers + adapters = " +
                            std::to_string(bound) + " (world " + std::to_string(world) + ")");
  if (comm) comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker
