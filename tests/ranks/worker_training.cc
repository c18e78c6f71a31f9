// Rank-worker commands for the reference (data-parallel) training tests.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "engine/comm/create_communicator.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/train/data_parallel.h"
#include "engine/train/trainer.h"
#include "tests/ranks/worker_checks.h"

namespace shardbench::worker {

using namespace shardbench::comm;

// Data parallel over ranks vs one process with the whole global batch, checked on every rank.
// Only the order of the gradient sums differs, so:
//  - the first step's averaged gradients agree to fp32 rounding (relative 1e-6 of the largest);
//  - the loss trajectory agrees within 1e-5 relative (the parity criterion the engines use);
//  - parameters agree within 1e-2 * lr * steps: Adam divides by sqrt(v), so an element whose
//    gradient is near zero (|g| ~ eps) turns rounding noise into an update of up to lr. Most
//    elements agree to ~1e-7; the bound catches any real difference (a wrong average is lr-sized
//    on every element).
int DataParallelParity(bool lora) {
  auto env = RankEnv::FromEnvironment();
  auto comm = Connect("gloo", env, CommOptions{std::chrono::seconds(60)});
  const auto config = model::NamedLlamaConfig("tiny");
  model::LoraConfig lora_config;
  lora_config.enabled = lora;
  const int64_t b = 2, steps = 5;
  const double lr = 1e-2;
  model::SyntheticData data(3, config.vocab_size, 24);
  struct Run {
    std::unique_ptr<model::LlamaForCausalLM> model;
    std::vector<at::Tensor> first_grads;
    std::vector<double> losses;
  };
  auto train = [&](Communicator* c, int64_t first, int64_t count) {
    Run run;
    run.model = model::BuildInitializedLlama(config, lora_config, 17, at::TensorOptions());
    optim::AdamW opt(optim::MakeParamGroups(*run.model, lr, 0.01, true));
    train::AllReduceGradients all_reduce(*run.model, c);
    train::Trainer trainer(*run.model, opt, c, &all_reduce);
    for (int64_t s = 0; s < steps; ++s) {
      run.losses.push_back(trainer.step(data.batch(s, first, count)).loss);
      if (s == 0) {
        for (auto& p : run.model->named_parameters()) {
          if (p.slot->grad().defined()) run.first_grads.push_back(p.slot->grad().clone());
        }
      }
    }
    return run;
  };
  Run dp = train(comm.get(), env.rank * b, b);
  Run single = train(nullptr, 0, b * env.world_size);
  Expect(dp.first_grads.size() == single.first_grads.size() && !dp.first_grads.empty(), "gradient count");
  for (size_t i = 0; i < dp.first_grads.size() && i < single.first_grads.size(); ++i) {
    const double scale = single.first_grads[i].abs().max().item<double>();
    const double diff = (dp.first_grads[i] - single.first_grads[i]).abs().max().item<double>();
    Expect(diff <= 1e-6 * scale + 1e-12, "first-step gradient " + std::to_string(i) + ": max diff " +
                                             std::to_string(diff) + " of max " + std::to_string(scale));
  }
  for (int64_t s = 0; s < steps; ++s) {
    Expect(std::abs(dp.losses[s] - single.losses[s]) <= 1e-5 * std::abs(single.losses[s]),
           "loss step " + std::to_string(s) + ": dp " + std::to_string(dp.losses[s]) + " vs single " +
               std::to_string(single.losses[s]));
  }
  auto pd = dp.model->named_parameters(), ps = single.model->named_parameters();
  for (size_t i = 0; i < pd.size(); ++i) {
    const double diff = (*pd[i].slot - *ps[i].slot).abs().max().item<double>();
    Expect(diff <= 1e-2 * lr * steps, pd[i].name + ": max |dp - single| = " + std::to_string(diff));
  }
  // Not vacuous: training moved the parameters far beyond the parity tolerance.
  {
    auto initial = model::BuildInitializedLlama(config, lora_config, 17, at::TensorOptions());
    double moved = 0;
    auto pi = initial->named_parameters();
    for (size_t i = 0; i < ps.size(); ++i) {
      if (ps[i].slot->requires_grad()) moved = std::max(moved, (*ps[i].slot - *pi[i].slot).abs().max().item<double>());
    }
    Expect(moved > 10 * 1e-2 * lr * steps, "training barely moved the parameters: " + std::to_string(moved));
  }
  comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker
