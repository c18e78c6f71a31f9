// The unsharded reference: every rank holds the whole model and optimizer, runs its own
// micro-batch, and gradients are all-reduced (summed, then divided by world size) in one flat
// bucket. With one rank it does nothing: plain single-process training. Every sharded engine
// is compared against it for loss parity, and must beat it on memory.
#pragma once

#include <vector>

#include "engine/comm/communicator.h"
#include "engine/model/module.h"
#include "engine/train/gradient_sync.h"

namespace shardbench::train {

class AllReduceGradients : public GradientSync {
 public:
  // `comm` may be null (single process).
  AllReduceGradients(model::Module& model, comm::Communicator* comm);
  void after_backward() override;
  std::vector<at::Tensor> local_grads() override;
  bool grads_sharded() const override { return false; }

 private:
  comm::Communicator* comm_;
  std::vector<at::Tensor> trainable_;
};

}  // namespace shardbench::train
