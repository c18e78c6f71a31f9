// The analytical communication model: per optimizer step and rank, the collectives each engine
// issues and their bytes exactly as the communicator counts them (engine/comm/communicator.h:
// all-gather output, reduce-scatter input, all-reduce tensor), from the same unit layouts as the
// memory model (engine/memory/memory_model.h), so any model and world size is planned on paper.
// Then a roofline: the time those bytes take on the given links, and how much of it the step's
// compute could hide.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "engine/comm/communicator.h"
#include "engine/memory/memory_model.h"

namespace shardbench::memory {

struct CommModelInput {
  MemoryModelInput layout;  // model, engine, wrap policy, world size, dtypes
  std::optional<c10::ScalarType> reduce_dtype;  // mixed precision: gradients reduced in it
  int64_t micro_batches = 1;                    // gradient accumulation
  bool clip_grad_norm = false;                  // max_grad_norm > 0: one all-reduce of the norm
};

struct CollectiveVolume {
  int64_t count = 0;
  int64_t bytes = 0;
};

// Per step and rank, indexed by comm::Collective.
struct CommPrediction {
  std::array<CollectiveVolume, static_cast<size_t>(comm::Collective::kCount)> per_step{};
  const CollectiveVolume& operator[](comm::Collective c) const { return per_step[static_cast<size_t>(c)]; }
  // False where the count is an estimate: per-parameter units nested inside a layer
  // (lora_separate) with several micro-batches, whose gathers between micro-batches depend on
  // where in the layer their inputs start to need gradients (flat's nested adapter units train
  // and reshard after each backward, so they are exact). Exact everywhere else
  // (tests/end_to_end/comm_plan_check.py).
  bool exact = true;
  // Bytes this rank puts on the wire per step with ring algorithms: (n-1)/n of an all-gather's
  // output and a reduce-scatter's input, 2(n-1)/n of an all-reduce's tensor.
  double wire_bytes(int world_size) const;
};

CommPrediction PredictComm(const CommModelInput& in);

// Where a step's communication stops hiding behind its compute.
struct Roofline {
  double comm_seconds = 0;     // wire bytes over the slowest link a rank's traffic crosses
  double compute_seconds = 0;  // 6 x params x tokens (+ attention) per rank over achieved FLOP/s
  double exposed_seconds = 0;  // what compute cannot hide: max(0, comm - compute)
};

struct Links {
  int gpus_per_node = 8;
  double intra_node_gbps = 3600;  // per GPU (NVLink 4: 450 GB/s)
  double inter_node_gbps = 400;   // per GPU (one 400 Gb/s NIC each)
  double achieved_tflops = 400;   // per GPU, what a step sustains (not the datasheet)
};

// A job of `world_size` ranks on nodes of links.gpus_per_node: traffic within one node moves
// at the intra-node rate, across nodes at the inter-node rate (a ring leaves every node).
Roofline EstimateStep(const CommPrediction& comm, int world_size, double flops_per_step_per_rank, const Links& links);

}  // namespace shardbench::memory
