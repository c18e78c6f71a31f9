// Google Benchmark: the flat (FSDP1) engine's step time over the plain unsharded step at world
// size 1, on the tiny and the 125m model; and tracing's cost (BM_TraceOverhead, below). Each iteration runs one plain and one flat step on the same batch,
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
#include <utility>

#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/optim/param_groups.h"
#include "engine/profile/span_recorder.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/train/trainer.h"

namespace {

using namespace shardbench;

// Runs the two sides of one pair on the same batch, swapping which goes first from pair to pair
// so that neither always runs on the warmer cache. Returns {a's seconds, b's seconds}.
template <typename A, typename B>
std::pair<double, double> AlternatingPair(int64_t pair, A&& a, B&& b) {
  if (pair % 2 == 0) {
    const double first = a();
    return {first, b()};
  }
  const double first = b();
  return {a(), first};
}

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
    const auto [tp, tf] = AlternatingPair(
        step++, [&] { return plain_trainer.step(b).seconds; }, [&] { return flat_trainer.step(b).seconds; });
    state.SetIterationTime(tf);
    plain_seconds += tp;
    flat_seconds += tf;
  }
  state.counters["plain_step_s"] = benchmark::Counter(plain_seconds, benchmark::Counter::kAvgIterations);
  state.counters["flat_over_plain"] = flat_seconds / plain_seconds;
}

// Tracing's own cost (issue #20: within 3% of off): the flat engine at world size 1 on one model,
// steps alternating between the span recorder off and on with memory samples (what
// profile.trace records; spans taken after each step, as harness/rank_trace.h does). In one
// process, step by step, so launch-to-launch noise cancels. Manual time = the traced step.
void TraceOverhead(benchmark::State& state, const std::string& model_name) {
  memory::InstallTrackingAllocator();  // memory samples read it
  const auto config = model::NamedLlamaConfig(model_name);
  model::LoraConfig lora;
  lora.enabled = true;
  lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  auto wrapped = model::BuildInitializedLlama(config, lora, 1, at::TensorOptions());
  shard::FlatShardedModel flat(*wrapped, nullptr, {shard::ParseWrapPolicy("transformer_block"), true, true});
  optim::AdamW opt(optim::MakeParamGroups(flat.named_parameters(), 1e-3, 0.0, true));
  train::Trainer trainer(*wrapped, opt, nullptr, &flat);
  model::SyntheticData data(1, config.vocab_size, state.range(1));
  const int64_t batch = state.range(0);
  for (int s = 0; s < 2; ++s) trainer.step(data.batch(s, 0, batch));
  profile::SpanRecorder& recorder = profile::SpanRecorder::Get();
  double off_seconds = 0, on_seconds = 0;
  int64_t spans = 0, samples = 0, step = 2;
  for (auto _ : state) {
    const auto b = data.batch(step, 0, batch);
    auto traced = [&] {
      recorder.start(/*memory_samples=*/true);
      const double t = trainer.step(b).seconds;
      spans += static_cast<int64_t>(recorder.take_spans().size());
      samples += static_cast<int64_t>(recorder.take_memory().size());
      recorder.stop();
      return t;
    };
    const auto [off, on] = AlternatingPair(step++, [&] { return trainer.step(b).seconds; }, traced);
    state.SetIterationTime(on);
    off_seconds += off;
    on_seconds += on;
  }
  state.counters["untraced_step_s"] = benchmark::Counter(off_seconds, benchmark::Counter::kAvgIterations);
  state.counters["traced_over_untraced"] = on_seconds / off_seconds;
  state.counters["spans_per_step"] = benchmark::Counter(static_cast<double>(spans), benchmark::Counter::kAvgIterations);
  state.counters["memory_samples_per_step"] = benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kAvgIterations);
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
  for (const auto& [model_name, batch, seq] : {std::tuple<std::string, int64_t, int64_t>{"tiny", 4, 64}, {"125m", 2, 128}}) {
    benchmark::RegisterBenchmark(("BM_TraceOverhead/model:" + model_name).c_str(), TraceOverhead, model_name)
        ->ArgNames({"batch", "seq"})
        ->Args({batch, seq})
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
