// The engine a scenario asks for (engine/shard/sharded_model.h), set up on an already built
// model with activation checkpointing and its optimizer built before or after wrapping.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/checkpoint/state_dict.h"
#include "engine/comm/communicator.h"
#include "engine/model/llama.h"
#include "engine/optim/adamw.h"
#include "engine/shard/sharded_model.h"
#include "engine/train/trainer.h"
#include "harness/scenario/scenario.h"

namespace shardbench {

// The trainer options (clipping, learning-rate schedule) a scenario asks for.
train::TrainerOptions TrainerOptionsFor(const Scenario& s);

// The scenario's mixed precision for the sharding engines.
shard::MixedPrecision MixedPrecisionFor(const Scenario& s);

// Order-independent summary of a tensor's values: tells "changed" from "unchanged" exactly.
using Fingerprint = std::pair<double, double>;
Fingerprint FingerprintOf(const at::Tensor& t);

class EngineUnderTest {
 public:
  // `materialize`: for a model still on the meta device (init=meta); buffers are materialised
  // after the engine is set up.
  EngineUnderTest(const Scenario& s, model::LlamaForCausalLM& model, comm::Communicator* comm,
                  const model::Materialization& materialize = {});

  optim::AdamW& optimizer() { return *optimizer_; }
  train::GradientSync* sync() { return engine_.get(); }
  // Collective for sharded engines: every full parameter's fingerprint, by name, in order.
  std::vector<std::pair<std::string, Fingerprint>> fingerprints();
  // Which original parameters are trainable (by name), fixed at setup.
  const std::vector<std::pair<std::string, bool>>& trainable() const { return trainable_; }
  // The engine's memory record with the optimizer's state (held optim_state) added.
  memory::MemoryRecord memory() const;
  void reset_peaks();
  // What state dicts save from and load into.
  checkpoint::StateDictTarget state_dict_target();

 private:
  comm::Communicator* comm_;
  std::unique_ptr<shard::ShardedModel> engine_;
  std::unique_ptr<optim::AdamW> optimizer_;
  std::vector<std::pair<std::string, bool>> trainable_;
};

}  // namespace shardbench
