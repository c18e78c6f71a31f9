// The collective operations the engine needs, over any backend (Gloo on CPU, NCCL on GPU).
//
// Semantics every backend honours:
//  - Every rank calls the same operations in the same order (as with torch.distributed).
//  - Async variants return a handle; operations issued on one communicator complete in issue
//    order. wait() rethrows a failure as shardbench::InfraError naming the rank and operation.
//  - Every operation is bounded by CommOptions::timeout; nothing hangs forever.
//  - Reductions are sums; averaging is the caller's job (FSDP divides by world size itself).
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace shardbench::comm {

enum class Collective { kAllGather = 0, kReduceScatter, kAllReduce, kBroadcast, kScatter, kBarrier, kCount };
const char* CollectiveName(Collective c);

// Counts and bytes are exact (deterministic for a given scenario); seconds are sampled.
// Bytes are the payload of the larger buffer: all-gather output, reduce-scatter input,
// all-reduce/broadcast tensor (the nccl-tests "size" convention).
struct CollectiveStats {
  int64_t count = 0;
  int64_t bytes = 0;
  double seconds = 0.0;
};
using CommStats = std::array<CollectiveStats, static_cast<size_t>(Collective::kCount)>;

struct CommOptions {
  // Bound on rendezvous and on every collective. Default matches torch.distributed's 10 min
  // for NCCL; tests use seconds.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the operation is complete (for NCCL: enqueued before any later work on the
  // current stream). Throws InfraError on failure or timeout.
  virtual void wait() = 0;
};
using WorkHandle = std::shared_ptr<Work>;

class Communicator {
 public:
  Communicator(int rank, int world_size, CommOptions options);
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const CommOptions& options() const { return options_; }
  virtual std::string backend() const = 0;
  // Where this backend's tensors must live (NCCL: the rank's GPU). Host-side helpers that
  // exchange small CPU tensors (records, strings) move them here and back.
  virtual at::Device device() const { return at::Device(at::kCPU); }

  // `input` is this rank's chunk; `output` (contiguous) receives every rank's chunk in rank
  // order. `counts[r]` is rank r's chunk numel; empty means equal chunks of input.numel().
  // A rank may contribute zero elements.
  WorkHandle all_gather_async(const at::Tensor& output, const at::Tensor& input,
                              std::vector<int64_t> counts = {});
  // Sum over ranks of `input`, scattered: rank r receives elements of chunk r into `output`.
  // `counts` as for all_gather (empty: equal chunks of output.numel()). `input` is not modified.
  WorkHandle reduce_scatter_async(const at::Tensor& output, const at::Tensor& input,
                                  std::vector<int64_t> counts = {});
  WorkHandle all_reduce_async(const at::Tensor& tensor);  // in place, sum
  WorkHandle broadcast_async(const at::Tensor& tensor, int root);
  // Equal chunks: `root`'s `input` (world_size x output.numel() elements, rank order) is split
  // and rank r receives chunk r into `output`. Other ranks' `input` is ignored (may be undefined).
  // Loading a full checkpoint on rank 0 sends each rank only its shard this way.
  WorkHandle scatter_async(const at::Tensor& output, const at::Tensor& input, int root);
  WorkHandle barrier_async();

  void all_gather(const at::Tensor& output, const at::Tensor& input, std::vector<int64_t> counts = {}) {
    all_gather_async(output, input, std::move(counts))->wait();
  }
  void reduce_scatter(const at::Tensor& output, const at::Tensor& input, std::vector<int64_t> counts = {}) {
    reduce_scatter_async(output, input, std::move(counts))->wait();
  }
  void all_reduce(const at::Tensor& tensor) { all_reduce_async(tensor)->wait(); }
  void broadcast(const at::Tensor& tensor, int root) { broadcast_async(tensor, root)->wait(); }
  void scatter(const at::Tensor& output, const at::Tensor& input, int root) {
    scatter_async(output, input, root)->wait();
  }
  void barrier() { barrier_async()->wait(); }

  CommStats stats() const;
  // Seconds callers spent blocked in Work::wait() (every synchronous helper waits too): the
  // time this rank's thread stood still for its peers. Step time minus this is the time the
  // rank was busy, which tells a straggler from the ranks waiting for it (their step times
  // are equal: collectives keep them in lockstep). Sampled; paused and reset with the stats.
  double blocked_seconds() const;
  void reset_stats();
  // While paused, operations are not counted (a checkpoint save between measured steps must
  // not change the run's exact communication figures). Pause only between synchronous calls.
  void set_stats_paused(bool paused) { stats_paused_ = paused; }

 protected:
  // Backends implement these; arguments are already validated and counts filled in.
  virtual WorkHandle do_all_gather(const at::Tensor& output, const at::Tensor& input,
                                   const std::vector<int64_t>& counts) = 0;
  virtual WorkHandle do_reduce_scatter(const at::Tensor& output, const at::Tensor& input,
                                       const std::vector<int64_t>& counts) = 0;
  virtual WorkHandle do_all_reduce(const at::Tensor& tensor) = 0;
  virtual WorkHandle do_broadcast(const at::Tensor& tensor, int root) = 0;
  virtual WorkHandle do_scatter(const at::Tensor& output, const at::Tensor& input, int root) = 0;
  virtual WorkHandle do_barrier() = 0;

  // Backends report the time an operation took once it is known.
  void record_seconds(Collective c, double seconds);
  // Backends whose operations run on a host thread (Gloo) report when one ran: a span on the
  // rank's communication track (engine/profile/span_recorder.h; ignored while stats are paused).
  void record_in_flight(Collective c, int64_t begin_ns, int64_t end_ns);
  // "gloo all_reduce on rank 1 of 3": prefix for error messages.
  std::string describe(Collective c) const;

 private:
  void record_issue(Collective c, int64_t bytes);
  // Wraps a backend's handle so that its wait() is timed into blocked_seconds_.
  WorkHandle timed(Collective c, WorkHandle work);
  friend class BlockedTimeWork;
  void record_blocked(double seconds);
  std::vector<int64_t> resolve_counts(std::vector<int64_t> counts, int64_t own_numel, const char* what) const;

  int rank_;
  int world_size_;
  CommOptions options_;
  mutable std::mutex stats_mutex_;
  std::atomic<bool> stats_paused_{false};
  CommStats stats_{};
  double blocked_seconds_ = 0.0;
};

}  // namespace shardbench::comm
