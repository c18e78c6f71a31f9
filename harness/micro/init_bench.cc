// Google Benchmark: parameter initialisation rate on one core (issue #21: "within 2x of
// at::normal_'s rate"). Normal(0, 0.02) floats per second, four ways on the same 4M-element
// tensor: our counter-based generator as it runs (engine/model/normal_kernel.h: our own log and
// cos four at a time, AVX2 where the CPU has it, bit-equal to the scalar definition), the same
// kernel built for the baseline instruction set, that scalar definition one element at a time,
// and at::normal_ (PyTorch's own, not counter-based: a rank could not compute its shard of a
// parameter on its own with it).
//
//   build/shardbench_init_bench [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "engine/model/normal_kernel.h"
#include "engine/model/param_init.h"

namespace {

using namespace shardbench;

constexpr int64_t kElements = int64_t{1} << 22;
const model::ParamInit kNormal{model::ParamInit::Kind::kNormal, 0.0, 0.02};

void BM_InitNormal(benchmark::State& state) {
  at::Tensor t = at::empty({kElements});
  int64_t begin = 0;
  for (auto _ : state) {
    model::FillInitRange(t, kNormal, 0x5eed, begin);
    begin += kElements;  // new elements each time, as a model's parameters are
    benchmark::DoNotOptimize(t.data_ptr<float>());
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_InitNormal)->Unit(benchmark::kMillisecond);

// The kernel built for the compiler's baseline (SSE2 on x86-64), which CPUs without AVX2 + FMA
// run; its few undecided elements by the scalar definition, as FillInitRange does.
void BM_InitNormalPortable(benchmark::State& state) {
  at::Tensor t = at::empty({kElements});
  int64_t begin = 0;
  for (auto _ : state) {
    model::FillNormal(model::NormalBlockPortable, t.data_ptr<float>(), kNormal, 0x5eed, begin, kElements);
    begin += kElements;
    benchmark::DoNotOptimize(t.data_ptr<float>());
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_InitNormalPortable)->Unit(benchmark::kMillisecond);

void BM_InitNormalScalar(benchmark::State& state) {
  at::Tensor t = at::empty({kElements});
  float* out = t.data_ptr<float>();
  uint64_t begin = 0;
  for (auto _ : state) {
    for (int64_t j = 0; j < kElements; ++j) out[j] = model::NormalElement(kNormal, 0x5eed, begin + static_cast<uint64_t>(j));
    begin += kElements;
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_InitNormalScalar)->Unit(benchmark::kMillisecond);

void BM_AtNormal(benchmark::State& state) {
  at::Tensor t = at::empty({kElements});
  for (auto _ : state) {
    t.normal_(0.0, 0.02);
    benchmark::DoNotOptimize(t.data_ptr<float>());
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_AtNormal)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);  // one core each: the rates compare like for like
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
