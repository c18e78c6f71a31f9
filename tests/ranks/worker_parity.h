// Shared by the engine parity commands of the rank worker (worker_flat.cc, worker_per_param.cc):
// the tiny model, the unsharded reference trained on the global batch in one process, a
// sharded run on this rank's part of it, and the comparison between them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/model/llama.h"
#include "engine/optim/adamw.h"
#include "engine/shard/wrap_policy.h"
#include "engine/train/gradient_sync.h"

namespace shardbench::worker {

constexpr int64_t kBatch = 2, kSteps = 5, kSeqLen = 24;
constexpr double kLr = 1e-2, kWeightDecay = 0.01;


std::unique_ptr<comm::Communicator> ConnectFromEnv();
model::LoraConfig LoraFor(bool enabled);
std::unique_ptr<model::LlamaForCausalLM> Build(bool lora);
shard::WrapPolicy Policy(const std::string& name);
// The unsharded reference with the whole global batch in one process.
std::vector<double> TrainReference(model::LlamaForCausalLM& m, int world, bool no_decay_on_norms,
                                   double max_grad_norm = 0);
// This rank's kBatch samples of each global batch, as `micro_batches` accumulated micro-batches.
std::vector<double> TrainSharded(model::LlamaForCausalLM& m, train::GradientSync& sharded, optim::AdamW& opt,
                                 comm::Communicator* comm, int64_t micro_batches = 1, double max_grad_norm = 0,
                                 double* min_grad_norm_seen = nullptr);
// Loss within 1e-5 relative; parameters within 1e-2 * lr * steps but for at most 0.1% of a
// tensor's elements (isolated Adam noise), none beyond lr * steps.
void CompareWithReference(const std::string& label, const std::vector<double>& losses, const std::vector<double>& ref,
                          const std::vector<std::pair<std::string, at::Tensor>>& gathered,
                          model::LlamaForCausalLM& reference);
// Not vacuous: training moved the trainable parameters far beyond the parity tolerance.
void ExpectTrainingMoved(const std::string& label, bool lora, model::LlamaForCausalLM& trained);

}  // namespace shardbench::worker
