// Google Benchmark: the flat (FSDP1) engine's step time over the plain unsharded step at world
// size 1, on the tiny and the 125m model. Each iteration runs one plain and one flat step on the same batch,
// alternating which goes first, so drift in machine speed affects both alike; the benchmark's
// time is the flat step's (manual time) and the counters say the plain step's and their ratio.
//
//   build/shardbench_engine_overhead [--benchmark_repetitions=5] [--benchmark_out=o.json]
//
// Names read BM_EngineOverhead/model:tiny/lora:1/batch:4/seq:64 (ArgNames); scripts/micro.sh runs it with
// the other micro-benchmarks into one directory that `shardbench compare` and `history` read.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>

#include <string>
#include <tuple>

#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/train/trainer.h"

namespace {

using namespace shardbench;

void EngineOverhead(benchmark::State& state, const std::string& model_name) {
  const auto config = model::NamedLlamaConfig(model_name);
  model::LoraConfig lora;
  lora.enabled = state.range(0) == 1;
  const int64_t batch = state.range(1), seq = state.range(2);

  auto plain = model::BuildInitializedLlama(config, lora, 1, at::TensorOptions());
  auto wrapped = model::BuildInitializedLlama(config, lora, 1, at::TensorOptions());
  shard::FlatShardedModel flat(*wrapped, nullptr, {shard::ParseWrapPolicy("transformer_block"), true, true});
  optim::AdamW plain_opt(optim::MakeParamGroups(*plain, 1e-3, 0.0, true));
  optim::AdamW flat_opt(optim::MakeParamGroups(flat.named_parameters(), 1e-3, 0.0, true));
  train::Trainer plain_trainer(*plain, plain_opt, nullptr, nullptr);
  train::Trainer flat_trainer(*wrapped, flat_opt, nullptr, &flat);
  model::SyntheticData data(1, config.vocab_size, seq);
  for (int s = 0; s < 2; ++s) {  // warmup: optimizer state allocated, caches warm
    plain_trainer.step(data.batch(s, 0, batch));
    flat_trainer.step(data.batch(s, 0, batch));
  }

  double plain_seconds = 0, flat_seconds = 0;
  int64_t step = 2;
  for (auto _ : state) {
    const auto b = data.batch(step, 0, batch);
    double tp, tf;
    if (step++ % 2 == 0) {  // neither always runs on a warmer cache
      tp = plain_trainer.step(b).seconds;
      tf = flat_trainer.step(b).seconds;
    } else {
      tf = flat_trainer.step(b).seconds;
      tp = plain_trainer.step(b).seconds;
    }
    state.SetIterationTime(tf);
    plain_seconds += tp;
    flat_seconds += tf;
  }
  state.counters["plain_step_s"] = benchmark::Counter(plain_seconds, benchmark::Counter::kAvgIterations);
  state.counters["flat_over_plain"] = flat_seconds / plain_seconds;
}
}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  // The model is a name, not a number, so each gets its own family.
  for (const auto& [model_name, batch, seq] : {std::tuple<std::string, int64_t, int64_t>{"tiny", 4, 64}, {"125m", 2, 128}}) {
    benchmark::RegisterBenchmark(("BM_EngineOverhead/model:" + model_name).c_str(), EngineOverhead, model_name)
        ->ArgNames({"lora", "batch", "seq"})
        ->ArgsProduct({{0, 1}, {batch}, {seq}})
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
