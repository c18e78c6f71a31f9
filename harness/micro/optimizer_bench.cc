// Google Benchmark: one AdamW step per implementation over many small tensors and over a few
// large ones (the same number of elements), against memory bandwidth. An AdamW update must at
// least read param, grad, exp_avg, exp_avg_sq and write param, exp_avg, exp_avg_sq: 28 bytes
// per fp32 element. BM_Copy measures what this machine copies per second (read + write), so
//   bound time = 28 * elements / copy bandwidth   and   efficiency = bound time / step time.
//
//   build/shardbench_optimizer_bench [--benchmark_filter=...] [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "engine/optim/adamw.h"

namespace {

using shardbench::optim::AdamW;
using shardbench::optim::AdamWImpl;
using shardbench::optim::AdamWOptions;

constexpr int64_t kElements = 1 << 24;  // 16M fp32 = 64 MiB of parameters

void BM_AdamWStep(benchmark::State& state) {
  const auto impl = static_cast<AdamWImpl>(state.range(0));
  const int64_t tensors = state.range(1);
  std::vector<at::Tensor> params;
  for (int64_t i = 0; i < tensors; ++i) {
    at::Tensor p = at::randn({kElements / tensors}).requires_grad_(true);
    p.mutable_grad() = at::randn({kElements / tensors});
    params.push_back(p);
  }
  AdamWOptions o;
  o.impl = impl;
  AdamW opt({{"all", params, 1e-3, 0.01}}, o);
  opt.step();  // state allocated outside the timed loop
  for (auto _ : state) opt.step();
  state.SetBytesProcessed(state.iterations() * kElements * 28);  // the minimum traffic
  state.SetLabel(std::string(shardbench::optim::AdamWImplName(impl)) + ", " + std::to_string(tensors) + " tensors");
}
BENCHMARK(BM_AdamWStep)
    ->ArgsProduct({{static_cast<int64_t>(AdamWImpl::kForLoop), static_cast<int64_t>(AdamWImpl::kForeach),
                    static_cast<int64_t>(AdamWImpl::kFused)},
                   {4, 4096}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// What the machine copies: bytes processed = bytes read + bytes written.
void BM_Copy(benchmark::State& state) {
  at::Tensor src = at::randn({4 * kElements}), dst = at::empty({4 * kElements});
  for (auto _ : state) {
    dst.copy_(src);
    benchmark::DoNotOptimize(dst.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 2 * src.nbytes());
}
BENCHMARK(BM_Copy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
