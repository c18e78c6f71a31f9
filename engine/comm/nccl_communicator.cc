#include "engine/comm/nccl_communicator.h"

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "engine/common/error.h"

namespace shardbench::comm {
namespace {

class NcclWork : public Work {
 public:
  NcclWork(c10::intrusive_ptr<c10d::Work> work, std::string what, std::function<void()> after = {})
      : work_(std::move(work)), what_(std::move(what)), after_(std::move(after)) {}
  void wait() override {
    try {
      work_->wait();
    } catch (const std::exception& e) {
      throw InfraError(what_ + " failed: " + e.what());
    }
    if (after_) {
      after_();
      after_ = nullptr;
    }
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  std::function<void()> after_;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const RankEnv& env, c10::intrusive_ptr<c10d::Store> store, CommOptions options)
      : Communicator(env.rank, env.world_size, options), device_(at::kCUDA, static_cast<int8_t>(env.local_rank)) {
    if (!at::cuda::is_available() || env.local_rank >= at::cuda::device_count()) {
      throw InfraError("nccl: rank " + std::to_string(env.rank) + " needs CUDA device " +
                       std::to_string(env.local_rank) + " but " + std::to_string(at::cuda::device_count()) +
                       " are visible");
    }
    c10::cuda::set_device(device_.index());
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = options.timeout;
    pg_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, opts);
    pg_->setBoundDeviceId(device_);
  }

  std::string backend() const override { return "nccl"; }

 protected:
  WorkHandle do_all_gather(const at::Tensor& output, const at::Tensor& input,
                           const std::vector<int64_t>& counts) override {
    const int64_t max_count = *std::max_element(counts.begin(), counts.end());
    if (std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == max_count; })) {
      at::Tensor out = output, in = input;
      return wrap(Collective::kAllGather, pg_->_allgather_base(out, in));
    }
    // Uneven chunks: gather padded chunks, then compact into the caller's output.
    at::Tensor padded_in = at::zeros({max_count}, input.options());
    if (input.numel()) padded_in.narrow(0, 0, input.numel()).copy_(input.reshape({-1}));
    at::Tensor padded_out = at::empty({max_count * world_size()}, input.options());
    auto work = pg_->_allgather_base(padded_out, padded_in);
    return wrap(Collective::kAllGather, work, [=] {
      int64_t offset = 0;
      for (size_t r = 0; r < counts.size(); ++r) {
        if (counts[r]) output.narrow(0, offset, counts[r]).copy_(padded_out.narrow(0, r * max_count, counts[r]));
        offset += counts[r];
      }
    });
  }

  WorkHandle do_reduce_scatter(const at::Tensor& output, const at::Tensor& input,
                               const std::vector<int64_t>& counts) override {
    const int64_t max_count = *std::max_element(counts.begin(), counts.end());
    at::Tensor padded_in = at::zeros({max_count * world_size()}, input.options());
    int64_t offset = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      if (counts[r]) padded_in.narrow(0, r * max_count, counts[r]).copy_(input.reshape({-1}).narrow(0, offset, counts[r]));
      offset += counts[r];
    }
    at::Tensor padded_out = at::empty({max_count}, input.options());
    auto work = pg_->_reduce_scatter_base(padded_out, padded_in);
    return wrap(Collective::kReduceScatter, work, [=] {
      if (output.numel()) output.reshape({-1}).copy_(padded_out.narrow(0, 0, output.numel()));
    });
  }

  WorkHandle do_all_reduce(const at::Tensor& tensor) override {
    std::vector<at::Tensor> ts{tensor};
    return wrap(Collective::kAllReduce, pg_->allreduce(ts));
  }

  WorkHandle do_broadcast(const at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> ts{tensor};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    return wrap(Collective::kBroadcast, pg_->broadcast(ts, opts));
  }

  at::Device device() const override { return device_; }

  WorkHandle do_scatter(const at::Tensor& output, const at::Tensor& input, int root) override {
    std::vector<at::Tensor> outputs{output};
    std::vector<std::vector<at::Tensor>> inputs;
    if (rank() == root) inputs.push_back(input.chunk(world_size()));
    c10d::ScatterOptions opts;
    opts.rootRank = root;
    return wrap(Collective::kScatter, pg_->scatter(outputs, inputs, opts));
  }

  WorkHandle do_barrier() override { return wrap(Collective::kBarrier, pg_->barrier()); }

 private:
  WorkHandle wrap(Collective c, c10::intrusive_ptr<c10d::Work> work, std::function<void()> after = {}) {
    return std::make_shared<NcclWork>(std::move(work), describe(c), std::move(after));
  }

  at::Device device_;
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg_;
};

}  // namespace

std::unique_ptr<Communicator> CreateNcclCommunicator(const RankEnv& env, c10::intrusive_ptr<c10d::Store> store,
                                                     CommOptions options) {
  return std::make_unique<NcclCommunicator>(env, std::move(store), options);
}

}  // namespace shardbench::comm
