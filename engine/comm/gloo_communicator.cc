#include "engine/comm/gloo_communicator.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <thread>

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/scatter.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <ATen/ops/empty.h>

#include "engine/common/error.h"
#include "engine/common/failpoints.h"
#include "engine/common/planted_work.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/profile/span_recorder.h"

namespace shardbench::comm {
namespace {

using Clock = std::chrono::steady_clock;

// This host's address on the route to the store's host (a UDP connect sends nothing): where the
// other ranks can reach this one. The hostname is no guide on a cluster node with several
// networks or inside a network namespace; empty if there is no route.
std::string LocalAddressTowards(const std::string& master, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(master.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return "";
  std::string out;
  for (addrinfo* a = found; a && out.empty(); a = a->ai_next) {
    const int fd = socket(a->ai_family, SOCK_DGRAM, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char text[INET6_ADDRSTRLEN] = {0};
      const void* ip = local.ss_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
                                                  : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
      if (inet_ntop(local.ss_family, ip, text, sizeof(text))) out = text;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return out;
}

// Gloo's rendezvous speaks its own Store interface; forward it to the c10d store.
class GlooStoreOverC10d : public gloo::rendezvous::Store {
 public:
  explicit GlooStoreOverC10d(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set("gloo/" + key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    auto v = store_->get("gloo/" + key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, store_->getTimeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const auto& k : keys) prefixed.push_back("gloo/" + k);
    store_->wait(prefixed, timeout);
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

// Gloo's calls block the calling thread; one worker thread per communicator runs them in
// issue order, which is what keeps every rank's sequence of collectives aligned.
class OrderedExecutor {
 public:
  OrderedExecutor() : thread_([this] { loop(); }) {}
  ~OrderedExecutor() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::shared_future<void> submit(std::function<void()> fn) {
    auto promise = std::make_shared<std::promise<void>>();
    std::shared_future<void> fut = promise->get_future().share();
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The operation (and the tensors it captured) is destroyed before the caller is told it
      // finished, so a freed buffer is freed by the time wait() returns: memory accounting
      // right after a collective is exact, not dependent on this thread's timing.
      queue_.push_back([promise, fn = std::move(fn)]() mutable {
        try {
          fn();
          fn = nullptr;
          promise->set_value();
        } catch (...) {
          fn = nullptr;
          promise->set_exception(std::current_exception());
        }
      });
    }
    cv_.notify_one();
    return fut;
  }

 private:
  void loop() {
    // Whatever collectives allocate (scratch, staging) is communication memory.
    memory::ScopedCategory comm_bytes(memory::Category::kCommBuffers);
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

class FutureWork : public Work {
 public:
  explicit FutureWork(std::shared_future<void> fut) : fut_(std::move(fut)) {}
  void wait() override { fut_.get(); }

 private:
  std::shared_future<void> fut_;
};

template <typename Fn>
void DispatchReducible(at::ScalarType t, const std::string& what, Fn&& fn) {
  switch (t) {
    case at::kFloat: fn(float{}); break;
    case at::kDouble: fn(double{}); break;
    case at::kHalf: fn(gloo::float16{}); break;
    case at::kInt: fn(int32_t{}); break;
    case at::kLong: fn(int64_t{}); break;
    default:
      throw std::invalid_argument(what + ": dtype " + std::string(c10::toString(t)) +
                                  " is not reducible on gloo (use float32/float64/float16/int)");
  }
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(const RankEnv& env, c10::intrusive_ptr<c10d::Store> store, CommOptions options)
      : Communicator(env.rank, env.world_size, options) {
    gloo::transport::tcp::attr attr;
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      attr.iface = ifname;
    } else if (IsLoopback(env.master_addr)) {
      attr.hostname = "127.0.0.1";
    } else if (std::string local = LocalAddressTowards(env.master_addr, env.master_port); !local.empty()) {
      attr.hostname = local;
    } else {
      char host[256] = {0};
      gethostname(host, sizeof(host) - 1);
      attr.hostname = host;
    }
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(env.rank, env.world_size);
      ctx->setTimeout(options.timeout);
      GlooStoreOverC10d gloo_store(store);
      ctx->connectFullMesh(gloo_store, device_);
      context_ = ctx;
    } catch (const std::exception& e) {
      throw InfraError("gloo: rank " + std::to_string(env.rank) + " could not connect to its peers (world size " +
                       std::to_string(env.world_size) + ", timeout " + std::to_string(options.timeout.count()) +
                       " ms): " + e.what());
    }
    store_ = std::move(store);
  }

  std::string backend() const override { return "gloo"; }

 protected:
  WorkHandle do_all_gather(const at::Tensor& output, const at::Tensor& input,
                           const std::vector<int64_t>& counts) override {
    // No reduction: move raw bytes, so every dtype (bf16 included) works.
    const size_t elem = input.element_size();
    return run(Collective::kAllGather, [=] {
      std::vector<size_t> byte_counts;
      for (int64_t c : counts) byte_counts.push_back(static_cast<size_t>(c) * elem);
      gloo::AllgathervOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(options().timeout);
      opts.setInput(static_cast<uint8_t*>(input.data_ptr()), input.numel() * elem);
      opts.setOutput(static_cast<uint8_t*>(output.data_ptr()), byte_counts);
      gloo::allgatherv(opts);
    });
  }

  WorkHandle do_reduce_scatter(const at::Tensor& output, const at::Tensor& input,
                               const std::vector<int64_t>& counts) override {
    const std::string what = describe(Collective::kReduceScatter);
    return run(Collective::kReduceScatter, [=] {
      // One rooted reduce per chunk: rank r receives the sum of chunk r. Gloo's
      // ReduceScatterHalvingDoubling misplaces chunks when the world size is not a power of
      // two (caught by comm_test at ws=3), so it is not used. Traffic per rank matches a ring
      // reduce-scatter; the caller's input is read, never written.
      at::Tensor scratch = at::empty({output.numel()}, output.options());
      int64_t offset = 0;
      for (int r = 0; r < world_size(); ++r) {
        const int64_t n = counts[r];
        if (n > 0) {
          DispatchReducible(input.scalar_type(), what, [&](auto tag) {
            using T = decltype(tag);
            gloo::ReduceOptions opts(context_);
            opts.setTag(next_tag());
            opts.setTimeout(options().timeout);
            opts.setRoot(r);
            opts.setInput(static_cast<T*>(input.data_ptr()) + offset, n);
            T* out = r == rank() ? static_cast<T*>(scratch.data_ptr()) : nullptr;
            std::vector<T> unused;
            if (out == nullptr) {
              unused.resize(n);
              out = unused.data();
            }
            opts.setOutput(out, n);
            void (*fn)(void*, const void*, const void*, size_t) = &gloo::sum<T>;
            opts.setReduceFunction(fn);
            gloo::reduce(opts);
          });
        }
        offset += n;
      }
      if (output.numel() > 0) output.copy_(scratch.view(output.sizes()));
    });
  }

  WorkHandle do_all_reduce(const at::Tensor& tensor) override {
    const std::string what = describe(Collective::kAllReduce);
    return run(Collective::kAllReduce, [=] {
      if (tensor.numel() == 0) return;
      DispatchReducible(tensor.scalar_type(), what, [&](auto tag) {
        using T = decltype(tag);
        gloo::AllreduceOptions opts(context_);
        opts.setTag(next_tag());
        opts.setTimeout(options().timeout);
        opts.setOutput(static_cast<T*>(tensor.data_ptr()), tensor.numel());
        void (*fn)(void*, const void*, const void*, size_t) = &gloo::sum<T>;
        opts.setReduceFunction(fn);
        gloo::allreduce(opts);
      });
    });
  }

  WorkHandle do_broadcast(const at::Tensor& tensor, int root) override {
    return run(Collective::kBroadcast, [=] {
      gloo::BroadcastOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(options().timeout);
      opts.setRoot(root);
      opts.setOutput(static_cast<uint8_t*>(tensor.data_ptr()), tensor.nbytes());
      gloo::broadcast(opts);
    });
  }

  WorkHandle do_scatter(const at::Tensor& output, const at::Tensor& input, int root) override {
    return run(Collective::kScatter, [=] {
      const size_t bytes = output.nbytes();
      if (bytes == 0) return;  // same numel on every rank, so every rank skips
      gloo::ScatterOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(options().timeout);
      opts.setRoot(root);
      std::vector<uint8_t*> chunks;
      if (rank() == root) {
        for (int r = 0; r < world_size(); ++r) chunks.push_back(static_cast<uint8_t*>(input.data_ptr()) + r * bytes);
        opts.setInputs(chunks, bytes);
      }
      opts.setOutput(static_cast<uint8_t*>(output.data_ptr()), bytes);
      gloo::scatter(opts);
    });
  }

  WorkHandle do_barrier() override {
    return run(Collective::kBarrier, [=] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(options().timeout);
      gloo::barrier(opts);
    });
  }

 private:
  WorkHandle run(Collective c, std::function<void()> op) {
    const std::string what = describe(c);
    auto fut = executor_.submit([this, c, what, op = std::move(op)] {
      const auto start = Clock::now();
      const int64_t start_ns = profile::NowNs();
      try {
        // Failpoint slow_all_gather: a slow link, deterministically (what prefetch must hide).
        if (c == Collective::kAllGather && FailpointActive("slow_all_gather")) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        // Failpoint slow_collectives_*pct: extra CPU work in the collective path, on its thread.
        if (const int64_t planted = PlantedCollectiveIterations()) PlantedWork(planted);
        op();
      } catch (const gloo::IoException& e) {
        throw InfraError(what + " failed (timeout " + std::to_string(options().timeout.count()) +
                         " ms; a peer rank died, is stuck, or called a different collective): " + e.what());
      } catch (const gloo::Exception& e) {
        throw InfraError(what + " failed: " + e.what());
      }
      record_seconds(c, std::chrono::duration<double>(Clock::now() - start).count());
      record_in_flight(c, start_ns, profile::NowNs());
    });
    return std::make_shared<FutureWork>(std::move(fut));
  }
  // Tags only need to agree across ranks; the ordered executor guarantees that.
  uint32_t next_tag() { return tag_++; }

  c10::intrusive_ptr<c10d::Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  uint32_t tag_ = 0;
  OrderedExecutor executor_;  // last: joins before the context goes away
};

}  // namespace

std::string GlooProviderLibrary() {
  Dl_info info{};
  void* fn = reinterpret_cast<void*>(&gloo::allgatherv);
  if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

std::unique_ptr<Communicator> CreateGlooCommunicator(const RankEnv& env, c10::intrusive_ptr<c10d::Store> store,
                                                     CommOptions options) {
  const std::string provider = GlooProviderLibrary();
  if (provider.find("libgloo") == std::string::npos) {
    throw InfraError("gloo: collectives resolved to " + provider +
                     " instead of Debian's libgloo.so; the link order must put libgloo before libtorch "
                     "(see engine/comm/README.md)");
  }
  return std::make_unique<GlooCommunicator>(env, std::move(store), options);
}

}  // namespace shardbench::comm
