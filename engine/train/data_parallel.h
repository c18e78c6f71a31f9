// The unsharded reference: every rank holds the whole model and optimizer, runs its own
// micro-batch, and gradients are all-reduced (summed, then divided by world size) in one
// flat bucket. With world size 1 and no communicator this is plain single-process training.
// Every sharded engine is compared against it for loss parity, and must beat it on memory.
#pragma once

#include "engine/comm/communicator.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/adamw.h"

namespace shardbench::train {

struct StepTimes {
  double loss = 0.0;            // mean over all ranks' tokens (global loss)
  double seconds = 0.0;         // whole step
  double forward_backward = 0.0;
  double grad_sync = 0.0;       // gradient all-reduce (0 on one rank)
  double optimizer = 0.0;
};

class DataParallelTrainer {
 public:
  // `comm` may be null (single process).
  DataParallelTrainer(model::LlamaForCausalLM& model, optim::AdamW& optimizer, comm::Communicator* comm);
  StepTimes step(const model::Batch& local_batch);

 private:
  void all_reduce_gradients();

  model::LlamaForCausalLM& model_;
  optim::AdamW& optimizer_;
  comm::Communicator* comm_;
  std::vector<at::Tensor> trainable_;
};

}  // namespace shardbench::train
