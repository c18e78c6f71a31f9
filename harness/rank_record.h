// What one rank measured in a run, as a fixed-layout vector of doubles so every rank's record
// can be all-gathered in one collective; and the pure functions that turn the gathered records
// into the result's memory section. The per-rank figures it packs are the ones the metric table
// names (harness/metric_table.h, which turns the records into the result's metrics).
#pragma once

#include <array>
#include <vector>

#include <c10/core/ScalarType.h>

#include <nlohmann/json.hpp>

#include "engine/comm/communicator.h"
#include "engine/memory/memory_record.h"
#include "reporters/run_result.h"

namespace shardbench {

// The dtypes parameter bytes are reported by (metrics param_bytes_<dtype>).
inline constexpr std::array<c10::ScalarType, 3> kStorageDtypes{c10::kFloat, c10::kBFloat16, c10::kHalf};

struct RankRecord {
  explicit RankRecord(int64_t steps)
      : step_seconds(steps), optimizer_seconds(steps), grad_sync_seconds(steps), loss(steps), local_loss(steps),
        comm_wait_seconds(steps),
        kernel_comm_seconds(steps, -1), kernel_exposed_seconds(steps, -1), kernel_compute_seconds(steps, -1),
        span_comm_seconds(steps, -1), span_exposed_seconds(steps, -1), span_idle_seconds(steps, -1),
        calibration_seconds(steps, -1) {}
  std::vector<double> step_seconds, optimizer_seconds, grad_sync_seconds, loss;
  std::vector<double> local_loss;  // this rank's own loss per step (the finite check names ranks by it)
  // Per step, the part of step_seconds this rank sat blocked in collectives (StepTimes::comm_wait).
  std::vector<double> comm_wait_seconds;
  // Per step from the kernel trace (engine/profile/kernel_overlap.h; -1: not traced): time some
  // communication kernel ran, the part of it no compute kernel overlapped, compute time.
  std::vector<double> kernel_comm_seconds, kernel_exposed_seconds, kernel_compute_seconds;
  // Per measured step from the rank's spans (harness/rank_trace.h; -1: not recorded): time some
  // collective was in flight, the part of it the rank computed through none of, and the time
  // with neither compute nor communication.
  std::vector<double> span_comm_seconds, span_exposed_seconds, span_idle_seconds;
  // Per step, the calibration kernel's time after it (timing.calibrate; -1: not timed).
  std::vector<double> calibration_seconds;
  double init_seconds = 0, connect_seconds = 0, construct_seconds = 0, load_seconds = 0, shard_seconds = 0, time_to_first_step = 0;
  double rss_peak_bytes = 0;
  double init_rss_peak_bytes = 0;  // VmHWM when init ended: the host's high-water mark of init
  double checkpoint_bytes_read = 0;
  double buffer_bytes = 0;  // the model's buffers this rank holds (rotary inv_freq), one count per storage
  // The scenario's checkpoint (-1: none saved / loaded): seconds, bytes this rank wrote, bytes
  // of the whole checkpoint, tracked host bytes the save allocated at its peak.
  double checkpoint_save_seconds = -1, checkpoint_load_seconds = -1, checkpoint_bytes = -1;
  double checkpoint_bytes_total = -1, checkpoint_save_peak_bytes = -1;
  double init_peak_bytes = 0;  // tracked host peak of building, loading and sharding the model
  // Instructions per measured step (profile.instructions; -1: not counted).
  double instructions_per_step = -1;
  std::vector<double> comm_counts, comm_bytes, comm_seconds;  // per Collective
  // Parameter bytes this rank holds between steps, per kStorageDtypes entry.
  std::vector<double> param_bytes_by_dtype = std::vector<double>(kStorageDtypes.size(), 0.0);
  // From the tracking allocator over the measured steps (bytes): overall peak, the breakdown
  // at that peak, and each category's own peak, per memory::Category.
  double tracked_peak = 0;
  // The CUDA caching allocator's own statistics over the measured steps (-1: not a GPU run):
  // peaks of allocated, reserved and active bytes, allocation retries (cudaMalloc failed, cache
  // freed, retried) and OOMs.
  double device_allocated_peak = -1, device_reserved_peak = -1, device_active_peak = -1;
  double device_alloc_retries = -1, device_ooms = -1;
  std::vector<double> tracked_at_peak, tracked_peak_by;
  // The engine's memory record (memory::MemoryRecord: exact, from its tensors and gauges), per
  // memory::Category: held between steps (optimizer state included), and its gauges' peaks over
  // the measured steps (gathered parameters, unsharded gradients).
  std::vector<double> engine_held = std::vector<double>(memory::kCategories, 0.0);
  std::vector<double> engine_peak = std::vector<double>(memory::kCategories, 0.0);
  double held(memory::Category c) const { return engine_held[static_cast<size_t>(c)]; }
  double peak(memory::Category c) const { return engine_peak[static_cast<size_t>(c)]; }

  void set_comm(const comm::CommStats& stats);
  std::vector<double> pack() const;
  static RankRecord Unpack(const std::vector<double>& packed, int64_t steps);
};

// Copies every per-step series (kSeries in the .cc) of steps [0, steps) from `from` into `to`.
void CopyFirstSteps(RankRecord& to, const RankRecord& from, int64_t steps);

// Drops every per-step series past its first `steps` (a run that stopped early: the record
// then describes the steps it took).
void KeepFirstSteps(RankRecord& r, int64_t steps);

// A restarted job's resumed run (harness/resume_point.h) measured only the steps after its
// checkpoint; when the measured window began before that checkpoint, the earlier attempt's
// part of it (`before`, recorded at the save) joins in: collective counts, bytes and seconds
// add up, peaks take the larger.
void JoinEarlierWindow(RankRecord& now, const RankRecord& before);

// All ranks' records, in rank order (just `local` when comm is null).
std::vector<RankRecord> GatherRankRecords(const RankRecord& local, comm::Communicator* comm);

// Per step (warmup included), the slowest rank's step time: what steady-state detection reads.
std::vector<double> SlowestRankStepSeconds(const std::vector<RankRecord>& ranks);
std::vector<RankMemory> BuildMemory(const std::vector<RankRecord>& ranks);

}  // namespace shardbench
