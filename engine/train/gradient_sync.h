// What an engine does to gradients between backward and the optimizer step: all-reduce them
// (the unsharded data-parallel reference) or reduce-scatter them into shards (FSDP engines).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace shardbench::train {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // Before a step's forward: drop gradients the engine holds beyond the optimizer's params.
  virtual void zero_grad() {}
  // After loss.backward(): gradients are ready for the optimizer when this returns.
  virtual void after_backward() = 0;
  // The gradients this rank holds for the optimizer (after after_backward), and whether they
  // are shards (each element on one rank: a global norm needs an all-reduce) or replicas.
  virtual std::vector<at::Tensor> local_grads() = 0;
  virtual bool grads_sharded() const = 0;
  // After a forward without backward (Trainer::evaluate): units a backward would have
  // resharded are resharded now; no gradient is touched.
  virtual void after_evaluation() {}
};

}  // namespace shardbench::train
