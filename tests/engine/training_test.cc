// The unsharded reference training: AdamW matches torch's update, loss drops on the synthetic
// task, and data parallel at ws=2 equals one process with the doubled batch.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/failpoints.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"
#include "engine/train/step_hooks.h"
#include "engine/train/trainer.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

TEST(AdamW, NoDecayGroupHoldsNorms) {
  auto m = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), {}, 1, at::TensorOptions());
  auto groups = optim::MakeParamGroups(*m, 1e-3, 0.1, true);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1].name, "no_decay");
  EXPECT_EQ(groups[1].weight_decay, 0.0);
  EXPECT_EQ(groups[1].params.size(), 2 * 2 + 1u);  // two norms per layer + the final norm
}

TEST(ReferenceTraining, LossDropsOnSyntheticTask) {
  auto m = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), {}, 1, at::TensorOptions());
  optim::AdamW opt(optim::MakeParamGroups(*m, 1e-2, 0.0, true));
  train::Trainer trainer(*m, opt, nullptr, nullptr);
  model::SyntheticData data(1, 256, 32);
  std::vector<double> losses;
  for (int step = 0; step < 15; ++step) losses.push_back(trainer.step(data.batch(step, 0, 8)).loss);
  // ln(256) = 5.55 at init; the bigram pattern is learnable, so the loss falls well below it.
  EXPECT_NEAR(losses.front(), std::log(256.0), 0.1);
  EXPECT_LT(losses.back(), 0.8 * losses.front()) << "loss " << losses.front() << " -> " << losses.back();
}

TEST(ReferenceTraining, DataParallelWs2EqualsOneProcessWithDoubledBatch) {
  auto run = testing::RunRankWorker(2, {"dp-parity"});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

TEST(ReferenceTraining, DataParallelWs2LoraEqualsOneProcess) {
  auto run = testing::RunRankWorker(2, {"dp-parity", "lora"});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

// The hooks' places in a step (the failpoints rely on them): slow_step_*pct acts in
// before_step_ends, after the loss read, and what it does there is inside the step's time.
class RecordingHooks : public train::StepHooks {
 public:
  std::vector<std::string> calls;
  double optimizer_elapsed = -1, end_elapsed = -1;
  void before_step(comm::Communicator*, bool) override { calls.push_back("before_step"); }
  void after_optimizer(comm::Communicator*, double elapsed, double) override {
    calls.push_back("after_optimizer");
    optimizer_elapsed = elapsed;
  }
  void before_step_ends(double elapsed) override {
    calls.push_back("before_step_ends");
    end_elapsed = elapsed;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
};

// slow_step_*pct spins where no peer's wait can hide it: as the step ends, not after the
// optimizer (before the loss read, where part of it hid in the loss all-reduce).
TEST(Failpoints, SlowStepSpinsAsTheStepEndsNotAfterTheOptimizer) {
  SetScenarioFailpoints({"slow_step_20pct"});
  train::StepHooks* hooks = train::FailpointHooks();
  auto seconds_of = [](auto&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double after_optimizer = seconds_of([&] { hooks->after_optimizer(nullptr, 1.0, 0.0); });
  const double at_the_end = seconds_of([&] { hooks->before_step_ends(0.25); });
  SetScenarioFailpoints({});
  EXPECT_LT(after_optimizer, 0.1);  // a spin here would take 20% of 1 s
  EXPECT_GE(at_the_end, 0.05);      // 20% of 0.25 s
}

TEST(ReferenceTraining, TheLastHookRunsAfterTheLossReadAndInsideTheStepTime) {
  auto m = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), {}, 1, at::TensorOptions());
  optim::AdamW opt(optim::MakeParamGroups(*m, 1e-2, 0.0, true));
  RecordingHooks hooks;
  train::TrainerOptions options;
  options.hooks = &hooks;
  train::Trainer trainer(*m, opt, nullptr, nullptr, options);
  model::SyntheticData data(1, 256, 32);
  const train::StepTimes t = trainer.step(data.batch(0, 0, 2));
  EXPECT_EQ(hooks.calls, (std::vector<std::string>{"before_step", "after_optimizer", "before_step_ends"}));
  EXPECT_GE(hooks.end_elapsed, hooks.optimizer_elapsed);
  EXPECT_GE(t.seconds, hooks.end_elapsed + 0.05);  // the hook's 50 ms are the step's
}

}  // namespace
}  // namespace shardbench
