// Rank-worker command for Trainer::evaluate, the learning check's same-batch loss: on every
// engine a forward under no_grad gives exactly the loss the training step computes on the same
// weights and batch, leaves nothing unsharded, and moves no parameter.
#include <ATen/ATen.h>

#include <memory>

#include "engine/common/error.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/shard/per_param_sharded_model.h"
#include "engine/train/data_parallel.h"
#include "engine/train/trainer.h"
#include "tests/ranks/worker_checks.h"
#include "tests/ranks/worker_parity.h"

namespace shardbench::worker {

int EvaluateCheck(const std::string& engine, bool reshard_after_forward) {
  auto comm = ConnectFromEnv();
  if (!comm) throw InputError("evaluate needs at least 2 ranks");
  const std::string tag = "[" + engine + (reshard_after_forward ? "" : " reshard_after_forward=false") + " evaluate]";
  auto m = Build(/*lora=*/true);
  std::unique_ptr<shard::ShardedModel> sharded;
  std::unique_ptr<train::AllReduceGradients> data_parallel;
  train::GradientSync* sync = nullptr;
  std::vector<model::NamedTensor> params;
  const shard::EngineOptions options{Policy("transformer_block"), true, reshard_after_forward};
  if (engine == "reference") {
    data_parallel = std::make_unique<train::AllReduceGradients>(*m, comm.get());
    sync = data_parallel.get();
    params = m->named_parameters();
  } else {
    if (engine == "flat") {
      sharded = std::make_unique<shard::FlatShardedModel>(*m, comm.get(), options);
    } else {
      sharded = std::make_unique<shard::PerParamShardedModel>(*m, comm.get(), options);
    }
    sync = sharded.get();
    params = sharded->named_parameters();
  }
  optim::AdamW opt(optim::MakeParamGroups(params, kLr, kWeightDecay, true));
  train::Trainer trainer(*m, opt, comm.get(), sync);
  model::SyntheticData data(3, m->config().vocab_size, kSeqLen);
  const model::Batch first = data.batch(0, comm->rank() * kBatch, kBatch);
  auto unsharded_held = [&] {
    return sharded ? sharded->memory().held[memory::Category::kParamsUnsharded] : int64_t{0};
  };
  auto snapshot = [&] {
    std::vector<at::Tensor> out;
    for (const auto& p : params) out.push_back(p.slot->detach().clone());
    return out;
  };

  const auto before = snapshot();
  const double evaluated = trainer.evaluate({first});
  Expect(unsharded_held() == 0, tag + " left " + std::to_string(unsharded_held()) + " bytes unsharded");
  const auto after_eval = snapshot();
  for (size_t i = 0; i < before.size(); ++i) ExpectEqual(after_eval[i], before[i], tag + " " + params[i].name);
  // The same arithmetic as the step's own loss (forward, mean, all-reduce): bit for bit.
  const double trained_on = trainer.step(first).loss;
  Expect(evaluated == trained_on,
         tag + " evaluate " + std::to_string(evaluated) + " != step " + std::to_string(trained_on));
  for (int64_t s = 1; s < kSteps; ++s) trainer.step(data.batch(s, comm->rank() * kBatch, kBatch));
  const double once_trained = trainer.evaluate({first});
  Expect(unsharded_held() == 0, tag + " left bytes unsharded after training");
  Expect(once_trained < evaluated, tag + " the first batch's loss did not drop: " + std::to_string(evaluated) + " -> " +
                                       std::to_string(once_trained));
  // Training goes on after an evaluation as before it.
  Expect(std::isfinite(trainer.step(data.batch(kSteps, comm->rank() * kBatch, kBatch)).loss),
         tag + " step after evaluate");
  return ExitCode();
}

}  // namespace shardbench::worker
