#include "engine/comm/communicator.h"

#include <chrono>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "engine/profile/span_recorder.h"

namespace shardbench::comm {

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllGather: return "all_gather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kScatter: return "scatter";
    case Collective::kBarrier: return "barrier";
    case Collective::kCount: break;
  }
  return "unknown";
}

Communicator::Communicator(int rank, int world_size, CommOptions options)
    : rank_(rank), world_size_(world_size), options_(options) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw std::invalid_argument("communicator: rank " + std::to_string(rank) +
                                " is outside world size " + std::to_string(world_size));
  }
}

namespace {
void RequireContiguous(const at::Tensor& t, const char* what) {
  if (!t.defined() || !t.is_contiguous()) {
    throw std::invalid_argument(std::string("communicator: ") + what + " must be a defined contiguous tensor");
  }
}
void RequireSameKind(const at::Tensor& a, const at::Tensor& b, const char* op) {
  if (a.scalar_type() != b.scalar_type() || a.device() != b.device()) {
    throw std::invalid_argument(std::string("communicator: ") + op +
                                " input and output must share dtype and device");
  }
}
}  // namespace

std::vector<int64_t> Communicator::resolve_counts(std::vector<int64_t> counts, int64_t own_numel,
                                                  const char* what) const {
  if (counts.empty()) return std::vector<int64_t>(world_size_, own_numel);
  if (static_cast<int>(counts.size()) != world_size_) {
    throw std::invalid_argument(std::string("communicator: ") + what + " counts has " +
                                std::to_string(counts.size()) + " entries, expected world size " +
                                std::to_string(world_size_));
  }
  if (counts[rank_] != own_numel) {
    throw std::invalid_argument(std::string("communicator: ") + what + " counts[" + std::to_string(rank_) +
                                "]=" + std::to_string(counts[rank_]) + " but this rank's chunk has " +
                                std::to_string(own_numel) + " elements");
  }
  return counts;
}

WorkHandle Communicator::all_gather_async(const at::Tensor& output, const at::Tensor& input,
                                          std::vector<int64_t> counts) {
  RequireContiguous(output, "all_gather output");
  RequireContiguous(input, "all_gather input");
  RequireSameKind(output, input, "all_gather");
  counts = resolve_counts(std::move(counts), input.numel(), "all_gather");
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (output.numel() != total) {
    throw std::invalid_argument("communicator: all_gather output has " + std::to_string(output.numel()) +
                                " elements, expected " + std::to_string(total));
  }
  record_issue(Collective::kAllGather, output.nbytes());
  return timed(Collective::kAllGather, do_all_gather(output, input, counts));
}

WorkHandle Communicator::reduce_scatter_async(const at::Tensor& output, const at::Tensor& input,
                                              std::vector<int64_t> counts) {
  RequireContiguous(output, "reduce_scatter output");
  RequireContiguous(input, "reduce_scatter input");
  RequireSameKind(output, input, "reduce_scatter");
  counts = resolve_counts(std::move(counts), output.numel(), "reduce_scatter");
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (input.numel() != total) {
    throw std::invalid_argument("communicator: reduce_scatter input has " + std::to_string(input.numel()) +
                                " elements, expected " + std::to_string(total));
  }
  record_issue(Collective::kReduceScatter, input.nbytes());
  return timed(Collective::kReduceScatter, do_reduce_scatter(output, input, counts));
}

WorkHandle Communicator::all_reduce_async(const at::Tensor& tensor) {
  RequireContiguous(tensor, "all_reduce tensor");
  record_issue(Collective::kAllReduce, tensor.nbytes());
  return timed(Collective::kAllReduce, do_all_reduce(tensor));
}

WorkHandle Communicator::broadcast_async(const at::Tensor& tensor, int root) {
  RequireContiguous(tensor, "broadcast tensor");
  if (root < 0 || root >= world_size_) {
    throw std::invalid_argument("communicator: broadcast root " + std::to_string(root) + " out of range");
  }
  record_issue(Collective::kBroadcast, tensor.nbytes());
  return timed(Collective::kBroadcast, do_broadcast(tensor, root));
}

WorkHandle Communicator::scatter_async(const at::Tensor& output, const at::Tensor& input, int root) {
  RequireContiguous(output, "scatter output");
  if (root < 0 || root >= world_size_) {
    throw std::invalid_argument("communicator: scatter root " + std::to_string(root) + " out of range");
  }
  if (rank_ == root) {
    RequireContiguous(input, "scatter input");
    RequireSameKind(output, input, "scatter");
    if (input.numel() != output.numel() * world_size_) {
      throw std::invalid_argument("communicator: scatter input has " + std::to_string(input.numel()) +
                                  " elements, expected world size x " + std::to_string(output.numel()));
    }
  }
  record_issue(Collective::kScatter, output.nbytes() * world_size_);
  return timed(Collective::kScatter, do_scatter(output, input, root));
}

WorkHandle Communicator::barrier_async() {
  record_issue(Collective::kBarrier, 0);
  return timed(Collective::kBarrier, do_barrier());
}

// A decorator over the backend's handle: the caller's time inside wait() is time its rank
// waited for the others (or for the transport), also a "wait" span on the caller's track
// (engine/profile/span_recorder.h). The communicator outlives every handle it issued: engines
// and the trainer wait on their handles before the communicator goes away.
class BlockedTimeWork : public Work {
 public:
  BlockedTimeWork(WorkHandle inner, Communicator* comm, Collective c) : inner_(std::move(inner)), comm_(comm), c_(c) {}
  void wait() override {
    const int64_t start = profile::NowNs();
    {
      // Like its collective's span, not recorded while stats are paused (a checkpoint save).
      std::optional<profile::ScopedSpan> span;
      if (!comm_->stats_paused_) span.emplace("wait", "wait", CollectiveName(c_));
      inner_->wait();
    }
    comm_->record_blocked(1e-9 * static_cast<double>(profile::NowNs() - start));
  }

 private:
  WorkHandle inner_;
  Communicator* comm_;
  Collective c_;
};

WorkHandle Communicator::timed(Collective c, WorkHandle work) {
  return std::make_shared<BlockedTimeWork>(std::move(work), this, c);
}

void Communicator::record_in_flight(Collective c, int64_t begin_ns, int64_t end_ns) {
  profile::SpanRecorder& recorder = profile::SpanRecorder::Get();
  if (!recorder.on() || stats_paused_) return;
  recorder.add({CollectiveName(c), CollectiveName(c), profile::SpanTrack::kCommunication, begin_ns, end_ns});
}

void Communicator::record_blocked(double seconds) {
  if (stats_paused_) return;
  std::lock_guard<std::mutex> lock(stats_mutex_);
  blocked_seconds_ += seconds;
}

double Communicator::blocked_seconds() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return blocked_seconds_;
}

void Communicator::record_issue(Collective c, int64_t bytes) {
  if (stats_paused_) return;
  std::lock_guard<std::mutex> lock(stats_mutex_);
  auto& s = stats_[static_cast<size_t>(c)];
  s.count += 1;
  s.bytes += bytes;
}

void Communicator::record_seconds(Collective c, double seconds) {
  if (stats_paused_) return;
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_[static_cast<size_t>(c)].seconds += seconds;
}

CommStats Communicator::stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

void Communicator::reset_stats() {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_ = CommStats{};
  blocked_seconds_ = 0.0;
}

std::string Communicator::describe(Collective c) const {
  return backend() + " " + CollectiveName(c) + " on rank " + std::to_string(rank_) + " of " +
         std::to_string(world_size_);
}

}  // namespace shardbench::comm
