// The per-parameter engine's all-gather of one unit: every rank contributes one segment (each
// param's padded dim-0 shard, one after the other); after one collective each param's real
// rows are copied out of every rank's segment into its own contiguous unsharded tensor.
//
// Params that share a gather dtype travel in it. Params of different dtypes (frozen bf16 base
// weights next to fp32 adapters, no mixed-precision cast) travel as bytes, each param's segment
// being its padded shard's bytes: FSDP2's foreach_all_gather does the same (a uint8 all-gather
// when the inputs' dtypes differ), so a unit never needs one dtype.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "engine/comm/communicator.h"
#include "engine/shard/dim0_layout.h"

namespace shardbench::shard {

struct GatherPlan {
  std::vector<Dim0Layout> layouts;           // each param's
  std::vector<at::ScalarType> dtypes;        // each param's gathered (and unsharded) dtype
  bool mixed = false;                        // dtypes differ: the buffer holds bytes
  at::ScalarType buffer_dtype = at::kFloat;  // dtypes[0], or kByte when mixed
  std::vector<int64_t> offsets;              // each param's start within a rank's segment (buffer elements)
  int64_t segment_numel = 0;                 // one rank's segment (buffer elements, padding included)

  bool as_bytes() const { return mixed; }
  int64_t units_per_element(size_t i) const;  // buffer elements per element of param i
};

GatherPlan PlanGather(std::vector<Dim0Layout> layouts, std::vector<at::ScalarType> dtypes);

// This rank's segment: each padded shard (cast to its gathered dtype when it differs).
at::Tensor CopyIn(const GatherPlan& plan, const std::vector<at::Tensor>& padded_shards);
// Each param's real rows from every rank's segment of `out` into dst[i] (contiguous, the
// param's shape and gathered dtype).
void CopyOut(const GatherPlan& plan, const std::vector<at::Tensor>& dst, const at::Tensor& out, int world_size);
// Copy-in, one all-gather (none on one rank), copy-out.
void GatherInto(const GatherPlan& plan, const std::vector<at::Tensor>& padded_shards, const std::vector<at::Tensor>& dst,
                comm::Communicator* comm);

}  // namespace shardbench::shard
