// Google Benchmark: checkpoint write and read throughput against the machine's memory copy
// bandwidth, and what a full state-dict save/load costs on the 125m model at one rank.
//   BM_Write   WriteSafetensors (temp file, fsync, rename) of 256 MiB in 4 or 1024 tensors
//   BM_Read    open (mmap) + copy every tensor into preallocated memory (page cache warm)
//   BM_Crc32   the CRC-32 a load verifies every file with
//   BM_Copy    bytes read + written per second by a plain tensor copy: the bound. Writing or
//              reading N bytes touches at least 2N (source and destination), so
//              efficiency = 2 * bytes/s of the operation / copy bytes/s.
//   BM_SaveStateDict / BM_LoadStateDict   kinds full, sharded and local on 125m (params +
//              AdamW state, ~1.5 GB), one rank: the whole path with manifest and digests.
//
//   build/shardbench_checkpoint_bench [--benchmark_filter=...]
// Results depend on the disk and page cache (writes are fsynced; reads hit the cache).
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <unistd.h>

#include <filesystem>

#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/state_dict.h"
#include "engine/common/durable_file.h"
#include "engine/model/llama.h"
#include "engine/optim/param_groups.h"

namespace {
namespace fs = std::filesystem;
using namespace shardbench;

constexpr int64_t kBytes = int64_t{256} << 20;

std::string ScratchDir() {
  static const std::string dir = [] {
    const std::string d = (fs::temp_directory_path() / ("shardbench_ckpt_bench_" + std::to_string(getpid()))).string();
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::vector<std::pair<std::string, at::Tensor>> Tensors(int64_t count) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (int64_t i = 0; i < count; ++i) out.push_back({"t" + std::to_string(i), at::randn({kBytes / 4 / count})});
  return out;
}

void BM_Write(benchmark::State& state) {
  const auto tensors = Tensors(state.range(0));
  const std::string path = ScratchDir() + "/write.safetensors";
  checkpoint::WriteSafetensors(path, tensors);  // untimed: the first write to a new file costs more
  for (auto _ : state) checkpoint::WriteSafetensors(path, tensors);
  state.SetBytesProcessed(state.iterations() * kBytes);
  state.SetLabel(std::to_string(state.range(0)) + " tensors, fsynced");
}
BENCHMARK(BM_Write)->Arg(4)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Read(benchmark::State& state) {
  const auto tensors = Tensors(state.range(0));
  const std::string path = ScratchDir() + "/read.safetensors";
  checkpoint::WriteSafetensors(path, tensors);
  std::vector<at::Tensor> dst;
  for (const auto& t : tensors) dst.push_back(at::empty_like(t.second));
  for (auto _ : state) {
    const auto file = checkpoint::SafetensorsFile::Open(path);
    for (size_t i = 0; i < tensors.size(); ++i) dst[i].copy_(file->tensor(tensors[i].first));
  }
  state.SetBytesProcessed(state.iterations() * kBytes);
  state.SetLabel(std::to_string(state.range(0)) + " tensors, page cache warm");
}
BENCHMARK(BM_Read)->Arg(4)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Crc32(benchmark::State& state) {
  const std::string path = ScratchDir() + "/crc.safetensors";
  checkpoint::WriteSafetensors(path, Tensors(4));
  for (auto _ : state) benchmark::DoNotOptimize(DigestFile(path).crc32);
  state.SetBytesProcessed(state.iterations() * kBytes);
}
BENCHMARK(BM_Crc32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Copy(benchmark::State& state) {
  at::Tensor src = at::randn({kBytes / 4}), dst = at::empty({kBytes / 4});
  for (auto _ : state) {
    dst.copy_(src);
    benchmark::DoNotOptimize(dst.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 2 * kBytes);  // read + write
}
BENCHMARK(BM_Copy)->Unit(benchmark::kMillisecond)->UseRealTime();

// The 125m model with AdamW state for every parameter (one step taken on zero gradients).
struct Trained {
  std::unique_ptr<model::LlamaForCausalLM> model;
  std::unique_ptr<shard::ShardedModel> engine;
  std::unique_ptr<optim::AdamW> opt;
  checkpoint::StateDictTarget target;
  Trained() {
    model = model::BuildInitializedLlama(model::NamedLlamaConfig("125m"), {}, 1, at::TensorOptions());
    opt = std::make_unique<optim::AdamW>(optim::MakeParamGroups(*model, 1e-4, 0.0, true));
    for (auto& p : model->named_parameters()) p.slot->mutable_grad() = at::zeros_like(*p.slot);
    opt->step();
    engine = shard::MakeShardedModel(*model, nullptr, shard::EngineOptions{});
    target = {engine.get(), opt.get(), nullptr};
  }
};

const char* kKinds[] = {"full", "sharded", "local"};

void BM_SaveStateDict(benchmark::State& state) {
  static Trained t;
  const auto kind = checkpoint::ParseStateDictKind(kKinds[state.range(0)]);
  int64_t bytes = checkpoint::SaveStateDict(kind, t.target, ScratchDir() + "/sd").bytes_total;  // untimed
  for (auto _ : state) bytes = checkpoint::SaveStateDict(kind, t.target, ScratchDir() + "/sd").bytes_total;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetLabel(std::string(kKinds[state.range(0)]) + ", 125m + AdamW state, " + std::to_string(bytes >> 20) + " MiB");
}
BENCHMARK(BM_SaveStateDict)->DenseRange(0, 2)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadStateDict(benchmark::State& state) {
  static Trained t;
  const auto kind = checkpoint::ParseStateDictKind(kKinds[state.range(0)]);
  const std::string dir = ScratchDir() + "/ld" + std::to_string(state.range(0));
  const int64_t bytes = checkpoint::SaveStateDict(kind, t.target, dir).bytes_total;
  for (auto _ : state) checkpoint::LoadStateDict(kind, t.target, dir);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetLabel(std::string(kKinds[state.range(0)]) + ", verified (CRC-32) then copied, page cache warm");
}
BENCHMARK(BM_LoadStateDict)->DenseRange(0, 2)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  fs::remove_all(ScratchDir());
  return 0;
}
