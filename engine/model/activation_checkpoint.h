// Activation checkpointing of a decoder layer (torch.utils.checkpoint, reentrant): forward runs
// the layer without recording a graph and keeps only its inputs; backward runs the layer again
// with a graph and backpropagates through it. Saved activations per layer drop to its input, at
// the cost of a second forward. Applied inside a sharding unit's hooks (checkpoint first, then
// shard, as FSDP(checkpoint_wrapper(layer))): before recomputing, the layer's sharding engine is
// told (ForwardHooks::before_recompute) so its parameters are the gathered ones again.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

#include "engine/model/module.h"

namespace shardbench::model {

using LayerBody = std::function<at::Tensor(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin)>;

// `body` must be deterministic (ours has no dropout) and must outlive the backward.
at::Tensor CheckpointedLayer(const Module& layer, const LayerBody* body, const at::Tensor& x, const at::Tensor& cos,
                             const at::Tensor& sin);

}  // namespace shardbench::model
