#include "harness/rank_record.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "engine/memory/tracking_allocator.h"
#include "harness/metric_table.h"

namespace shardbench {
namespace {
constexpr size_t kCollectives = static_cast<size_t>(comm::Collective::kCount);
constexpr size_t kCategories = memory::kCategories;

// Per-step series, one entry per step (warmup included).
constexpr std::vector<double> RankRecord::*kSeries[] = {
    &RankRecord::step_seconds,        &RankRecord::optimizer_seconds,      &RankRecord::grad_sync_seconds,
    &RankRecord::loss,                &RankRecord::local_loss,             &RankRecord::comm_wait_seconds,
    &RankRecord::kernel_comm_seconds,
    &RankRecord::kernel_exposed_seconds, &RankRecord::kernel_compute_seconds,
    &RankRecord::span_comm_seconds,   &RankRecord::span_exposed_seconds,   &RankRecord::span_idle_seconds,
    &RankRecord::calibration_seconds};

// One number per rank: every field the metric table names, then the ones only the memory
// section or another metric reads.
std::vector<double RankRecord::*> Scalars() {
  std::vector<double RankRecord::*> out;
  for (const MetricRow& row : MetricTable()) {
    if (row.field) out.push_back(row.field);
  }
  out.push_back(&RankRecord::checkpoint_bytes_total);  // checkpoint_bytes' samples
  return out;
}

// Fixed-length vectors (padded): per collective, then per memory category, then per dtype.
std::vector<std::pair<std::vector<double> RankRecord::*, size_t>> Fixed() {
  return {{&RankRecord::comm_counts, kCollectives},     {&RankRecord::comm_bytes, kCollectives},
          {&RankRecord::comm_seconds, kCollectives},    {&RankRecord::tracked_at_peak, kCategories},
          {&RankRecord::tracked_peak_by, kCategories},  {&RankRecord::engine_held, kCategories},
          {&RankRecord::engine_peak, kCategories},      {&RankRecord::param_bytes_by_dtype, kStorageDtypes.size()}};
}

}  // namespace

std::vector<double> SlowestRankStepSeconds(const std::vector<RankRecord>& ranks) {
  std::vector<double> out(ranks[0].step_seconds.size(), 0.0);
  for (const auto& r : ranks) {
    for (size_t s = 0; s < out.size(); ++s) out[s] = std::max(out[s], r.step_seconds[s]);
  }
  return out;
}

void RankRecord::set_comm(const comm::CommStats& stats) {
  comm_counts.assign(kCollectives, 0);
  comm_bytes.assign(kCollectives, 0);
  comm_seconds.assign(kCollectives, 0);
  for (size_t i = 0; i < kCollectives; ++i) {
    comm_counts[i] = static_cast<double>(stats[i].count);
    comm_bytes[i] = static_cast<double>(stats[i].bytes);
    comm_seconds[i] = stats[i].seconds;
  }
}

std::vector<double> RankRecord::pack() const {
  std::vector<double> out;
  for (auto series : kSeries) out.insert(out.end(), (this->*series).begin(), (this->*series).end());
  for (auto scalar : Scalars()) out.push_back(this->*scalar);
  for (const auto& [field, size] : Fixed()) {
    std::vector<double> padded(this->*field);
    padded.resize(size, 0.0);
    out.insert(out.end(), padded.begin(), padded.end());
  }
  return out;
}

RankRecord RankRecord::Unpack(const std::vector<double>& p, int64_t steps) {
  RankRecord r(steps);
  if (p.size() != r.pack().size()) {
    throw std::invalid_argument("a rank record of " + std::to_string(steps) + " steps packs " +
                                std::to_string(r.pack().size()) + " values, not " + std::to_string(p.size()));
  }
  size_t i = 0;
  for (auto series : kSeries) {
    for (auto& x : r.*series) x = p[i++];
  }
  for (auto scalar : Scalars()) r.*scalar = p[i++];
  for (const auto& [field, size] : Fixed()) {
    (r.*field).assign(p.begin() + i, p.begin() + i + size);
    i += size;
  }
  return r;
}

void CopyFirstSteps(RankRecord& to, const RankRecord& from, int64_t steps) {
  for (auto series : kSeries) std::copy_n((from.*series).begin(), steps, (to.*series).begin());
}

void KeepFirstSteps(RankRecord& r, int64_t steps) {
  for (auto series : kSeries) (r.*series).resize(static_cast<size_t>(steps));
}

void JoinEarlierWindow(RankRecord& now, const RankRecord& before) {
  for (size_t i = 0; i < kCollectives; ++i) {
    now.comm_counts[i] += before.comm_counts[i];
    now.comm_bytes[i] += before.comm_bytes[i];
    now.comm_seconds[i] += before.comm_seconds[i];
  }
  for (size_t c = 0; c < kCategories; ++c) {
    now.engine_peak[c] = std::max(now.engine_peak[c], before.engine_peak[c]);
    now.tracked_peak_by[c] = std::max(now.tracked_peak_by[c], before.tracked_peak_by[c]);
  }
  if (before.tracked_peak > now.tracked_peak) {
    now.tracked_peak = before.tracked_peak;
    now.tracked_at_peak = before.tracked_at_peak;
  }
  for (double RankRecord::*peak : {&RankRecord::device_allocated_peak, &RankRecord::device_reserved_peak,
                                   &RankRecord::device_active_peak}) {
    now.*peak = std::max(now.*peak, before.*peak);
  }
  if (before.device_alloc_retries > 0) now.device_alloc_retries += before.device_alloc_retries;
  if (before.device_ooms > 0) now.device_ooms += before.device_ooms;
}

std::vector<RankRecord> GatherRankRecords(const RankRecord& local, comm::Communicator* comm) {
  const int64_t steps = static_cast<int64_t>(local.step_seconds.size());
  if (!comm) return {local};
  std::vector<double> packed = local.pack();
  at::Tensor in = at::tensor(packed, at::kDouble).to(comm->device());
  at::Tensor out = at::empty({in.numel() * comm->world_size()}, in.options());
  comm->all_gather(out, in);
  out = out.cpu();
  std::vector<RankRecord> all;
  for (int r = 0; r < comm->world_size(); ++r) {
    at::Tensor part = out.narrow(0, r * in.numel(), in.numel()).contiguous();
    all.push_back(RankRecord::Unpack(std::vector<double>(part.data_ptr<double>(), part.data_ptr<double>() + part.numel()), steps));
  }
  return all;
}

std::vector<RankMemory> BuildMemory(const std::vector<RankRecord>& ranks) {
  std::vector<RankMemory> out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankRecord& r = ranks[i];
    RankMemory m;
    m.rank = static_cast<int>(i);
    // What the tracking allocator saw at this rank's peak, by category (NaN: not measured, as
    // on a peer whose allocator does not tag its tensors by role: the maps stay empty).
    for (size_t c = 0; c < kCategories; ++c) {
      const auto cat = memory::CategoryName(static_cast<memory::Category>(c));
      if (!std::isnan(r.tracked_at_peak[c])) m.categories[cat] = static_cast<int64_t>(r.tracked_at_peak[c]);
      if (!std::isnan(r.tracked_peak_by[c])) m.peak_by_category[cat] = static_cast<int64_t>(r.tracked_peak_by[c]);
    }
    if (!std::isnan(r.tracked_peak)) m.peak_allocated = static_cast<int64_t>(r.tracked_peak);
    if (r.device_allocated_peak >= 0) {  // a GPU run: the device allocator's own peaks
      m.peak_allocated = static_cast<int64_t>(r.device_allocated_peak);
      if (!std::isnan(r.device_reserved_peak)) m.peak_reserved = static_cast<int64_t>(r.device_reserved_peak);
    }
    // What the engine holds between steps, exactly, from its tensors.
    for (memory::Category c : memory::kHeldBetweenSteps) {
      if (!std::isnan(r.held(c))) m.held[memory::CategoryName(c)] = static_cast<int64_t>(r.held(c));
    }
    // (NaN where the kernel refused the reset: null, the metric listed as not measured.)
    if (!std::isnan(r.rss_peak_bytes)) m.host_rss_peak = static_cast<int64_t>(r.rss_peak_bytes);
    out.push_back(m);
  }
  return out;
}


}  // namespace shardbench
