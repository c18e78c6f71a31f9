// The unsharded reference as an engine: every rank holds the whole model and optimizer state
// and gradients are all-reduced (engine/train/data_parallel.h). Every sharded engine is
// compared against it for loss parity, and must beat it on memory.
#pragma once

#include <vector>

#include "engine/comm/communicator.h"
#include "engine/shard/sharded_model.h"
#include "engine/train/data_parallel.h"

namespace shardbench::shard {

class ReplicatedModel : public ShardedModel {
 public:
  // The model must be materialised. `comm` may be null (one rank).
  ReplicatedModel(model::LlamaForCausalLM& model, comm::Communicator* comm);

  EngineKind kind() const override { return EngineKind::kReference; }
  std::vector<model::NamedTensor> named_parameters() override { return model().named_parameters(); }
  void for_each_full_param(const FullParamFn& fn) override;
  std::vector<ParamPiece> pieces() override;
  LocalTensors local_tensors() override;
  nlohmann::json local_layout() const override;
  memory::MemoryRecord memory() const override;

  void zero_grad() override { all_reduce_.zero_grad(); }
  void after_backward() override { all_reduce_.after_backward(); }
  std::vector<at::Tensor> local_grads() override { return all_reduce_.local_grads(); }
  bool grads_sharded() const override { return false; }

 private:
  train::AllReduceGradients all_reduce_;
};

}  // namespace shardbench::shard
