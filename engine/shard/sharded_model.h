// The one shape every engine has, whatever it shards: the unsharded data-parallel reference
// (a replicated model), FSDP1-style flat parameters and FSDP2-style per-parameter shards. The
// trainer, the state dicts and the harness talk to engines only through this interface; the
// engine is chosen once, by kind, in MakeShardedModel (the only place that names them all).
//
// An engine is also the model's GradientSync (engine/train/gradient_sync.h): zero_grad before
// a step, after_backward to make gradients ready, local_grads for clipping and the optimizer.
// Sharding engines install forward hooks on the modules they wrap (engine/shard/unit_driver.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/memory/memory_record.h"
#include "engine/model/llama.h"
#include "engine/model/param_init.h"
#include "engine/shard/full_params.h"
#include "engine/shard/engine_kind.h"
#include "engine/shard/mixed_precision.h"
#include "engine/shard/param_piece.h"
#include "engine/shard/wrap_policy.h"
#include "engine/train/gradient_sync.h"

namespace shardbench::shard {

// LOCAL state dicts: the tensors exactly as this engine holds them, keyed as it names them,
// and (key, tensor the optimizer holds) for the optimizer state saved beside them.
struct LocalTensors {
  std::vector<std::pair<std::string, at::Tensor>> params;
  std::vector<std::pair<std::string, at::Tensor>> owners;
};

class ShardedModel : public train::GradientSync {
 public:
  explicit ShardedModel(model::LlamaForCausalLM& model) : model_(model) {}
  ~ShardedModel() override = default;

  virtual EngineKind kind() const = 0;
  model::LlamaForCausalLM& model() const { return model_; }

  // What the wrapped model exposes as parameters: build the optimizer from these after wrapping.
  virtual std::vector<model::NamedTensor> named_parameters() = 0;
  // Collective: calls `fn(name, full tensor)` for every parameter, a unit at a time (at most
  // one unit is gathered at once).
  virtual void for_each_full_param(const FullParamFn& fn) = 0;
  // Collective: every full parameter with its original name, in the model's order.
  std::vector<std::pair<std::string, at::Tensor>> gather_full_params();

  // Checkpoints: every parameter of the model, in the model's order, on every rank (a rank
  // holding none of a parameter still lists it, with numel 0), so collectives over pieces line up.
  virtual std::vector<ParamPiece> pieces() = 0;
  virtual LocalTensors local_tensors() = 0;
  // What makes the LOCAL tensors' bytes meaningful (layout, wrapping); a load refuses any
  // difference. The checkpoint adds the engine kind and world size.
  virtual nlohmann::json local_layout() const = 0;

  // Bytes this rank holds, exact, from the tensors (held: params_sharded, params_unsharded
  // (full parameters allocated now; a replica: all of them), grads (what the optimizer reads:
  // shards, or a replica's), params_by_dtype) and the engine's gauges (peak: params_unsharded,
  // grads before their reduce-scatter) since reset_peaks(). The optimizer's state is not the
  // engine's: EngineUnderTest adds it.
  virtual memory::MemoryRecord memory() const = 0;
  virtual void reset_peaks() {}

 private:
  model::LlamaForCausalLM& model_;
};

// Everything a scenario can ask of an engine; options a kind does not have are ignored by it
// (use_orig_params is the flat engine's; the reference has no wrapping, prefetch or mixed precision).
// The concrete engines take these too (kind aside), so tests can build one directly:
// FlatShardedModel(model, comm, {policy, /*use_orig_params=*/false}).
struct EngineOptions {
  WrapPolicy policy;
  bool use_orig_params = true;
  bool reshard_after_forward = true;   // false: SHARD_GRAD_OP (keep params until backward)
  MixedPrecision mixed_precision;
  model::Materialization materialize;  // meta-device init: each rank fills only its elements
  // FSDP1's forward_prefetch / backward_prefetch=BACKWARD_PRE, FSDP2's explicit prefetch: gather
  // the next unit (in the forward order recorded on the first iteration, reversed in backward)
  // while this one computes. Costs one more unit's unsharded params at a time.
  bool forward_prefetch = false;
  bool backward_prefetch = false;
  EngineKind kind = EngineKind::kReference;  // what MakeShardedModel builds
};

// The model must be materialised unless `options.materialize` fills it. `comm` may be null (one rank).
std::unique_ptr<ShardedModel> MakeShardedModel(model::LlamaForCausalLM& model, comm::Communicator* comm,
                                               const EngineOptions& options);

}  // namespace shardbench::shard
