// FSDP2 (fully_shard) over a whole model: one PerParamUnit per unit the wrap policy picks,
// driven by the shared unit driver. What is its own: every parameter keeps its name and
// becomes a new dim-0 sharded leaf (what the optimizer holds), and a unit's backward ends when
// its inputs' gradients are in (units whose inputs need no gradient, such as the first layer
// of a LoRA model and the root, finish in after_backward).
#pragma once

#include <vector>

#include "engine/comm/communicator.h"
#include "engine/shard/per_param_unit.h"
#include "engine/shard/sharded_model.h"
#include "engine/shard/unit_driver.h"
#include "engine/shard/wrap_policy.h"

namespace shardbench::shard {

class PerParamShardedModel : public UnitDriver<PerParamUnit, EngineKind::kPerParam> {
 public:
  // The model is on its device, or on the meta device with `options.materialize` filling each
  // rank's elements (meta-device init). `comm` may be null (one rank).
  PerParamShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm,
                       const EngineOptions& options);

  // Original names, sharded parameters (new tensors: build optimizers from these).
  std::vector<model::NamedTensor> named_parameters() override;
  std::vector<at::Tensor> local_grads() override;
  std::vector<ParamPiece> pieces() override;
  // Row shards under the original names.
  LocalTensors local_tensors() override;
  nlohmann::json local_layout() const override;
};

}  // namespace shardbench::shard
