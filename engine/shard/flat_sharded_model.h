// FSDP1 over a whole model: one FlatParamUnit per unit the wrap policy picks, driven by the
// shared unit driver (forward hooks, execution order, prefetch, gauges). What is its own: the
// optimizer sees the original parameters (use_orig_params=true, 1-D shard views outside
// forward) or one "<unit>._flat_param" per unit, and checkpoints cut each flat shard into the
// pieces of the parameters it overlaps.
#pragma once

#include <vector>

#include "engine/comm/communicator.h"
#include "engine/shard/flat_param_unit.h"
#include "engine/shard/sharded_model.h"
#include "engine/shard/unit_driver.h"
#include "engine/shard/wrap_policy.h"

namespace shardbench::shard {

class FlatShardedModel : public UnitDriver<FlatParamUnit, EngineKind::kFlat> {
 public:
  // The model is on its device, or on the meta device with `options.materialize` filling each
  // rank's elements (meta-device init). `comm` may be null (one rank).
  FlatShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm, const EngineOptions& options);

  std::vector<model::NamedTensor> named_parameters() override;
  // The shard gradients of trainable parameters only: with use_orig_params the original
  // parameters' gradient views (frozen slots of mixed units excluded, as in FSDP's
  // clip_grad_norm_ over module.parameters()); otherwise each unit's flat shard gradient.
  std::vector<at::Tensor> local_grads() override;
  std::vector<ParamPiece> pieces() override;
  // One flat shard per unit under "<unit>._flat_param", never the original names as well.
  LocalTensors local_tensors() override;
  nlohmann::json local_layout() const override;

 private:
  bool use_orig_params_;
};

}  // namespace shardbench::shard
