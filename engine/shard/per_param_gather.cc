#include "engine/shard/per_param_gather.h"

#include <ATen/ATen.h>

#include "engine/common/error.h"
#include "engine/memory/tracking_allocator.h"

namespace shardbench::shard {
namespace {

// A contiguous tensor as a 1-D run of buffer elements (its bytes when the plan travels as bytes).
at::Tensor AsBufferElements(const GatherPlan& plan, const at::Tensor& t) {
  at::Tensor flat = t.view({-1});
  return plan.as_bytes() ? flat.view(at::kByte) : flat;
}

}  // namespace

int64_t GatherPlan::units_per_element(size_t i) const {
  return as_bytes() ? static_cast<int64_t>(c10::elementSize(dtypes[i])) : 1;
}

GatherPlan PlanGather(std::vector<Dim0Layout> layouts, std::vector<at::ScalarType> dtypes) {
  if (layouts.size() != dtypes.size()) throw InfraError("PlanGather: one dtype per layout expected");
  GatherPlan plan;
  plan.layouts = std::move(layouts);
  plan.dtypes = std::move(dtypes);
  for (auto d : plan.dtypes) plan.mixed |= d != plan.dtypes.front();
  plan.buffer_dtype = plan.dtypes.empty() ? at::kFloat : plan.mixed ? at::kByte : plan.dtypes.front();
  for (size_t i = 0; i < plan.layouts.size(); ++i) {
    plan.offsets.push_back(plan.segment_numel);
    plan.segment_numel += plan.layouts[i].padded_numel() * plan.units_per_element(i);
  }
  return plan;
}

at::Tensor CopyIn(const GatherPlan& plan, const std::vector<at::Tensor>& padded_shards) {
  at::Tensor in;
  {
    memory::ScopedCategory buffers(memory::Category::kCommBuffers);
    in = at::empty({plan.segment_numel}, padded_shards.front().options().dtype(plan.buffer_dtype).requires_grad(false));
  }
  for (size_t i = 0; i < padded_shards.size(); ++i) {
    const at::Tensor& src = padded_shards[i];
    // Mixed precision casts before the collective (only the cast copy travels).
    const at::Tensor typed = src.scalar_type() == plan.dtypes[i] ? src : src.to(plan.dtypes[i]);
    in.narrow(0, plan.offsets[i], plan.layouts[i].padded_numel() * plan.units_per_element(i))
        .copy_(AsBufferElements(plan, typed.contiguous()));
  }
  return in;
}

void CopyOut(const GatherPlan& plan, const std::vector<at::Tensor>& dst, const at::Tensor& out, int world_size) {
  for (size_t i = 0; i < dst.size(); ++i) {
    const Dim0Layout& l = plan.layouts[i];
    const int64_t row_units = l.row_numel * plan.units_per_element(i);
    const at::Tensor rows = AsBufferElements(plan, dst[i]).view({l.rows, row_units});
    for (int r = 0; r < world_size; ++r) {
      const int64_t n = l.local_rows(r);
      if (n == 0) continue;
      rows.narrow(0, l.first_row(r), n)
          .copy_(out.narrow(0, r * plan.segment_numel + plan.offsets[i], n * row_units).view({n, row_units}));
    }
  }
}

void GatherInto(const GatherPlan& plan, const std::vector<at::Tensor>& padded_shards, const std::vector<at::Tensor>& dst,
                comm::Communicator* comm) {
  if (dst.empty()) return;
  const int ws = comm ? comm->world_size() : 1;
  if (ws == 1) {  // the shard is the whole param: copy (and cast) its rows
    for (size_t i = 0; i < dst.size(); ++i) dst[i].view({-1}).copy_(padded_shards[i].view({-1}).narrow(0, 0, dst[i].numel()));
    return;
  }
  at::Tensor in = CopyIn(plan, padded_shards);
  at::Tensor out;
  {
    memory::ScopedCategory buffers(memory::Category::kCommBuffers);
    out = at::empty({plan.segment_numel * ws}, in.options());
  }
  comm->all_gather(out, in);
  CopyOut(plan, dst, out, ws);
}

}  // namespace shardbench::shard
