// A training step's host synchronisations, counted on a GPU (W3 6/7): under CUDA's sync-debug
// mode every synchronising call but the loss read (engine/train/host_sync.h) is an error, so
// steps that complete made no other. The reference trainer with gradient clipping and each AdamW
// implementation, then both sharding engines over NCCL at world size 1 (their all-gathers and
// reduce-scatters run as on many GPUs). Skipped without a GPU.
#include "engine/train/host_sync.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include "engine/comm/create_communicator.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/shard/per_param_sharded_model.h"
#include "engine/shard/wrap_policy.h"
#include "engine/train/data_parallel.h"
#include "engine/train/trainer.h"

namespace shardbench::train {
namespace {

TEST(HostSync, AStepReadsTheDeviceOnlyForItsLoss) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no GPU visible: runs in scripts/gpu-check.sh";
  const auto config = model::NamedLlamaConfig("tiny");
  model::LoraConfig lora;
  lora.enabled = true;
  const model::SyntheticData data(3, config.vocab_size, 64);
  {  // the mode works: a read back outside the allowed one is an error
    ForbidHostSyncs forbid;
    EXPECT_ANY_THROW(at::ones({1}, at::TensorOptions().device(at::kCUDA)).item<float>());
  }
  for (const auto impl : {optim::AdamWImpl::kForLoop, optim::AdamWImpl::kForeach, optim::AdamWImpl::kFused}) {
    auto m = model::BuildInitializedLlama(config, lora, 17, at::TensorOptions().device(at::kCUDA));
    optim::AdamW opt(optim::MakeParamGroups(*m, 1e-3, 0.01, true), {0.9, 0.999, 1e-8, impl});
    AllReduceGradients sync(*m, nullptr);
    TrainerOptions options;
    options.max_grad_norm = 0.5;
    Trainer trainer(*m, opt, nullptr, &sync, options);
    for (int64_t step = 0; step < 3; ++step) {
      model::Batch b = data.batch(step, 0, 2);
      b.input_ids = b.input_ids.to(at::kCUDA);
      b.labels = b.labels.to(at::kCUDA);
      ForbidHostSyncs forbid;
      EXPECT_NO_THROW(trainer.step(b)) << optim::AdamWImplName(impl) << " step " << step;
    }
  }
}

TEST(HostSync, ShardedStepsOverNcclReadTheDeviceOnlyForTheirLoss) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no GPU visible: runs in scripts/gpu-check.sh";
  auto comm = comm::Connect("nccl", comm::RankEnv{}, comm::CommOptions{std::chrono::seconds(60)});
  const auto config = model::NamedLlamaConfig("tiny");
  model::LoraConfig lora;
  lora.enabled = true;
  const model::SyntheticData data(3, config.vocab_size, 64);
  for (const std::string engine : {"flat", "per_param"}) {
    auto m = model::BuildInitializedLlama(config, lora, 17, at::TensorOptions().device(at::kCUDA));
    const shard::EngineOptions options{shard::ParseWrapPolicy("transformer_block", 20000), true, true};
    std::unique_ptr<shard::ShardedModel> sharded;
    if (engine == "flat") {
      sharded = std::make_unique<shard::FlatShardedModel>(*m, comm.get(), options);
    } else {
      sharded = std::make_unique<shard::PerParamShardedModel>(*m, comm.get(), options);
    }
    optim::AdamW opt(optim::MakeParamGroups(sharded->named_parameters(), 1e-3, 0.01, true),
                     {0.9, 0.999, 1e-8, optim::AdamWImpl::kFused});
    TrainerOptions trainer_options;
    trainer_options.max_grad_norm = 0.5;
    Trainer trainer(*m, opt, comm.get(), sharded.get(), trainer_options);
    for (int64_t step = 0; step < 3; ++step) {
      model::Batch b = data.batch(step, 0, 2);
      b.input_ids = b.input_ids.to(at::kCUDA);
      b.labels = b.labels.to(at::kCUDA);
      ForbidHostSyncs forbid;
      EXPECT_NO_THROW(trainer.step(b)) << engine << " step " << step;
    }
  }
}

}  // namespace
}  // namespace shardbench::train
