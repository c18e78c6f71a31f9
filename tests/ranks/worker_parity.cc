#include "tests/ranks/worker_parity.h"

#include <ATen/ATen.h>

#include <cmath>

#include "engine/comm/create_communicator.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/train/trainer.h"
#include "tests/ranks/worker_checks.h"

namespace shardbench::worker {

std::unique_ptr<comm::Communicator> ConnectFromEnv() {
  auto env = comm::RankEnv::FromEnvironment();
  if (env.world_size == 1) return nullptr;
  return comm::Connect("gloo", env, comm::CommOptions{std::chrono::seconds(60)});
}

model::LoraConfig LoraFor(bool enabled) {
  model::LoraConfig l;
  l.enabled = enabled;
  return l;
}

std::unique_ptr<model::LlamaForCausalLM> Build(bool lora) {
  return model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), LoraFor(lora), 17, at::TensorOptions());
}

shard::WrapPolicy Policy(const std::string& name) { return shard::ParseWrapPolicy(name, /*min_params=*/20000); }

std::vector<double> TrainReference(model::LlamaForCausalLM& m, int world, bool no_decay_on_norms,
                                   double max_grad_norm) {
  optim::AdamW opt(optim::MakeParamGroups(m, kLr, kWeightDecay, no_decay_on_norms));
  train::TrainerOptions o;
  o.max_grad_norm = max_grad_norm;
  train::Trainer trainer(m, opt, nullptr, nullptr, o);
  model::SyntheticData data(3, m.config().vocab_size, kSeqLen);
  std::vector<double> losses;
  for (int64_t s = 0; s < kSteps; ++s) losses.push_back(trainer.step(data.batch(s, 0, kBatch * world)).loss);
  return losses;
}

std::vector<double> TrainSharded(model::LlamaForCausalLM& m, train::GradientSync& sharded, optim::AdamW& opt,
                                 comm::Communicator* comm, int64_t micro_batches, double max_grad_norm,
                                 double* min_grad_norm_seen) {
  train::TrainerOptions o;
  o.max_grad_norm = max_grad_norm;
  train::Trainer trainer(m, opt, comm, &sharded, o);
  model::SyntheticData data(3, m.config().vocab_size, kSeqLen);
  const int rank = comm ? comm->rank() : 0;
  const int64_t per_micro = kBatch / micro_batches;
  std::vector<double> losses;
  for (int64_t s = 0; s < kSteps; ++s) {
    std::vector<model::Batch> micro;
    for (int64_t i = 0; i < micro_batches; ++i) micro.push_back(data.batch(s, rank * kBatch + i * per_micro, per_micro));
    losses.push_back(trainer.step(micro).loss);
    if (min_grad_norm_seen) *min_grad_norm_seen = std::min(*min_grad_norm_seen, trainer.last_grad_norm());
  }
  return losses;
}

// Loss within 1e-5 relative; parameters within 1e-2 * lr * steps (see worker_training.cc for
// why Adam needs that bound; a real error is lr-sized on every element).
void CompareWithReference(const std::string& label, const std::vector<double>& losses, const std::vector<double>& ref,
                          const std::vector<std::pair<std::string, at::Tensor>>& gathered,
                          model::LlamaForCausalLM& reference) {
  for (size_t s = 0; s < ref.size(); ++s) {
    Expect(std::abs(losses[s] - ref[s]) <= 1e-5 * std::abs(ref[s]),
           label + " loss step " + std::to_string(s) + ": sharded " + std::to_string(losses[s]) + " vs reference " +
               std::to_string(ref[s]));
  }
  auto ref_params = reference.named_parameters();
  Expect(gathered.size() == ref_params.size(), label + " gathered parameter count");
  for (size_t i = 0; i < gathered.size() && i < ref_params.size(); ++i) {
    Expect(gathered[i].first == ref_params[i].name, label + " name " + gathered[i].first);
    const at::Tensor delta = (gathered[i].second - *ref_params[i].slot).abs();
    const double diff = delta.max().item<double>();
    const int64_t over = (delta > 1e-2 * kLr * kSteps).sum().item<int64_t>();
    // Adam turns rounding noise on an element whose gradient is ~eps into an update of up to lr
    // (see worker_training.cc), so a few isolated elements may exceed the bound; a real error
    // (a wrong average, a misplaced shard) moves a large share of the tensor by ~lr. Allowed:
    // at most 0.1% of the elements over the bound, none beyond lr * steps (Adam's reach).
    Expect(over * 1000 <= delta.numel() && diff <= kLr * kSteps,
           label + " " + gathered[i].first + ": max |sharded - reference| = " + std::to_string(diff) + " (" +
               std::to_string(over) + " of " + std::to_string(delta.numel()) + " elements over " +
               std::to_string(1e-2 * kLr * kSteps) + "; " + std::to_string((delta > 1e-6).sum().item<int64_t>()) +
               " over 1e-6)");
  }
}

void ExpectTrainingMoved(const std::string& label, bool lora, model::LlamaForCausalLM& trained) {
  auto initial = Build(lora);
  double moved = 0;
  auto ip = initial->named_parameters(), rp = trained.named_parameters();
  for (size_t i = 0; i < ip.size(); ++i) {
    if (rp[i].slot->requires_grad()) moved = std::max(moved, (*rp[i].slot - *ip[i].slot).abs().max().item<double>());
  }
  Expect(moved > 10 * 1e-2 * kLr * kSteps, label + " training barely moved the parameters: " + std::to_string(moved));
}

}  // namespace shardbench::worker
