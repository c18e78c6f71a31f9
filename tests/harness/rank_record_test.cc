// What a rank measured travels to rank 0 as a packed vector and becomes the result's metrics:
// the round trip keeps every field, and the CUDA allocator's statistics (here from a fake
// source: records filled by hand, as ReadDeviceMemory would on a GPU) become the device metrics
// with the right kinds; busy time per rank becomes the straggler ratio.
#include <gtest/gtest.h>

#include <set>

#include "harness/metric_table.h"
#include "harness/rank_record.h"

namespace shardbench {
namespace {

RankRecord FakeGpuRank(double allocated, double reserved, double retries) {
  RankRecord r(3);
  r.step_seconds = {0.1, 0.1, 0.1};
  r.optimizer_seconds = {0.01, 0.01, 0.01};
  r.grad_sync_seconds = {0.02, 0.02, 0.02};
  r.loss = {3, 2, 1};
  r.device_allocated_peak = allocated;
  r.device_reserved_peak = reserved;
  r.device_active_peak = allocated - 512;
  r.device_alloc_retries = retries;
  r.device_ooms = 0;
  return r;
}

const Metric& Find(const std::vector<Metric>& metrics, const std::string& name) {
  for (const auto& m : metrics) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no metric " + name);
}

TEST(RankRecord, PackUnpackKeepsEveryField) {
  RankRecord r = FakeGpuRank(4096, 6144, 2);
  r.init_peak_bytes = 123;
  r.param_bytes_by_dtype = {1, 2, 3};
  r.comm_wait_seconds = {0.5, 0.25, 0.125};
  const RankRecord back = RankRecord::Unpack(r.pack(), 3);
  EXPECT_EQ(back.loss, r.loss);
  EXPECT_EQ(back.comm_wait_seconds, r.comm_wait_seconds);
  EXPECT_EQ(back.init_peak_bytes, 123);
  EXPECT_EQ(back.device_active_peak, 4096 - 512);
  EXPECT_EQ(back.device_alloc_retries, 2);
  EXPECT_EQ(back.device_ooms, 0);
  EXPECT_EQ(back.param_bytes_by_dtype, r.param_bytes_by_dtype);
}

// The engine's memory record travels as one array per held/peak, and each byte metric and the
// memory section read their category from it.
TEST(RankRecord, EngineMemoryRecordBecomesTheByteMetricsAndHeldSection) {
  using memory::Category;
  auto rank = [](double scale) {
    RankRecord r = FakeGpuRank(4096, 6144, 0);
    r.engine_held[static_cast<size_t>(Category::kParamsSharded)] = 100 * scale;
    r.engine_held[static_cast<size_t>(Category::kParamsUnsharded)] = 7 * scale;
    r.engine_held[static_cast<size_t>(Category::kGrads)] = 30 * scale;
    r.engine_held[static_cast<size_t>(Category::kOptimState)] = 60 * scale;
    r.engine_peak[static_cast<size_t>(Category::kParamsUnsharded)] = 400 * scale;
    r.engine_peak[static_cast<size_t>(Category::kGrads)] = 120 * scale;
    return RankRecord::Unpack(r.pack(), 3);
  };
  const std::vector<RankRecord> ranks{rank(1), rank(2)};
  const auto metrics = BuildMetrics(ranks, 1, 100, 10, 5);
  EXPECT_EQ(Find(metrics, "param_bytes").per_rank, (std::vector<double>{107, 214}));
  EXPECT_EQ(Find(metrics, "param_bytes").samples, std::vector<double>{214});
  EXPECT_EQ(Find(metrics, "params_unsharded_peak_bytes").per_rank, (std::vector<double>{400, 800}));
  EXPECT_EQ(Find(metrics, "grad_bytes").per_rank, (std::vector<double>{30, 60}));
  EXPECT_EQ(Find(metrics, "grads_unsharded_peak_bytes").per_rank, (std::vector<double>{120, 240}));
  EXPECT_EQ(Find(metrics, "optim_state_bytes").per_rank, (std::vector<double>{60, 120}));
  const auto memory = BuildMemory(ranks);
  EXPECT_EQ(memory[1].held.at("params_sharded"), 200);
  EXPECT_EQ(memory[1].held.at("params_unsharded"), 14);
  EXPECT_EQ(memory[1].held.at("grads"), 60);
  EXPECT_EQ(memory[1].held.at("optim_state"), 120);
  EXPECT_EQ(memory[1].held.size(), 4u);
}

TEST(RankRecord, DeviceAllocatorStatisticsBecomeMetricsOnlyOnGpuRuns) {
  const auto gpu = BuildMetrics({FakeGpuRank(4096, 6144, 0), FakeGpuRank(8192, 8192, 3)}, 1, 100, 10, 5);
  EXPECT_EQ(Find(gpu, "device_allocated_peak").kind, "exact");
  EXPECT_EQ(Find(gpu, "device_allocated_peak").per_rank, (std::vector<double>{4096, 8192}));
  EXPECT_EQ(Find(gpu, "device_reserved_peak").kind, "sampled");
  EXPECT_EQ(Find(gpu, "device_fragmentation_peak").per_rank, (std::vector<double>{2048, 0}));
  EXPECT_EQ(Find(gpu, "device_alloc_retries").samples, std::vector<double>{3});
  EXPECT_EQ(Find(gpu, "device_ooms").samples, std::vector<double>{0});
  EXPECT_EQ(Find(gpu, "device_active_peak").per_rank, (std::vector<double>{3584, 7680}));
  RankRecord cpu(3);
  cpu.step_seconds = cpu.optimizer_seconds = cpu.grad_sync_seconds = {0.1, 0.1, 0.1};
  for (const auto& m : BuildMetrics({cpu}, 1, 100, 10, 5)) EXPECT_EQ(m.name.rfind("device_", 0), std::string::npos) << m.name;
}

// The kernel trace's per-step figures (filled by hand as the runner does from
// SummarizeOverlap) travel with the record and become the kernel_* metrics over measured steps.
TEST(RankRecord, KernelTraceBecomesOverlapMetricsOnlyWhenTraced) {
  RankRecord a = FakeGpuRank(4096, 4096, 0), b = FakeGpuRank(4096, 4096, 0);
  a.kernel_comm_seconds = {9, 0.010, 0.020};  // step 0 is warmup: never read
  a.kernel_exposed_seconds = {9, 0.002, 0.010};
  a.kernel_compute_seconds = {9, 0.050, 0.050};
  b.kernel_comm_seconds = {9, 0.010, 0.0};
  b.kernel_exposed_seconds = {9, 0.0, 0.0};
  b.kernel_compute_seconds = {9, 0.060, 0.040};
  const RankRecord back = RankRecord::Unpack(a.pack(), 3);
  EXPECT_EQ(back.kernel_exposed_seconds, a.kernel_exposed_seconds);
  const auto m = BuildMetrics({a, b}, 1, 100, 10, 5);
  EXPECT_EQ(Find(m, "kernel_comm_time").samples, (std::vector<double>{0.010, 0.020}));
  EXPECT_EQ(Find(m, "kernel_exposed_comm_time").samples, (std::vector<double>{0.002, 0.010}));
  EXPECT_EQ(Find(m, "kernel_compute_time").samples, (std::vector<double>{0.060, 0.050}));
  const Metric& ratio = Find(m, "kernel_overlap_ratio");
  EXPECT_EQ(ratio.better, "higher");
  ASSERT_EQ(ratio.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(ratio.samples[0], 1 - 0.002 / 0.020);  // both ranks' communication together
  EXPECT_DOUBLE_EQ(ratio.samples[1], 0.5);
  EXPECT_DOUBLE_EQ(ratio.per_rank[0], 1 - 0.012 / 0.030);
  EXPECT_DOUBLE_EQ(ratio.per_rank[1], 1.0);  // rank 1 hid everything
  for (const auto& metric : BuildMetrics({FakeGpuRank(1, 1, 0)}, 1, 100, 10, 5)) {
    EXPECT_EQ(metric.name.rfind("kernel_", 0), std::string::npos) << metric.name;  // untraced: none
  }
}

// A rank whose every measured step takes `step` seconds, `wait` of them blocked in collectives;
// step 0 (warmup) is slow and never waits, so reading it would change every figure below.
RankRecord Timed(double step, double wait) {
  RankRecord r(3);
  r.step_seconds = {9, step, step};
  r.comm_wait_seconds = {0, wait, wait};
  r.optimizer_seconds = r.grad_sync_seconds = {0.01, 0.01, 0.01};
  return r;
}

// Busy 125, 250, 125 ms (binary fractions: every quotient below is exact): all step times are
// equal, as in lockstep, and only busy time shows rank 1 working twice as long.
TEST(RankRecord, StragglerRatioIsTheBusiestRankOverTheMedianRank) {
  const auto m = BuildMetrics({Timed(0.5, 0.375), Timed(0.5, 0.25), Timed(0.5, 0.375)}, 1, 100, 10, 5);
  const Metric& ratio = Find(m, "straggler_ratio");
  EXPECT_EQ(ratio.unit, "ratio");
  EXPECT_EQ(ratio.better, "lower");
  EXPECT_EQ(ratio.kind, "sampled");
  EXPECT_EQ(ratio.samples, std::vector<double>{2.0});
  EXPECT_EQ(ratio.per_rank, (std::vector<double>{1.0, 2.0, 1.0}));
  const Metric& busy = Find(m, "step_time_busy");
  EXPECT_EQ(busy.samples, (std::vector<double>{0.25, 0.25}));  // per measured step, the busiest rank
  EXPECT_EQ(busy.per_rank, (std::vector<double>{0.125, 0.25, 0.125}));
  EXPECT_EQ(Find(m, "step_time").per_rank, (std::vector<double>{0.5, 0.5, 0.5}));
  // Four ranks: the median of busy times interpolates (0.125 and 0.25 -> 0.1875).
  const auto four = BuildMetrics({Timed(0.5, 0.375), Timed(0.5, 0.25), Timed(0.5, 0.375), Timed(0.5, 0.25)}, 1, 100, 10, 5);
  EXPECT_EQ(Find(four, "straggler_ratio").samples, std::vector<double>{0.25 / 0.1875});
}

// A run that diverged during warmup took fewer steps than its windows start at: the metrics are
// built from what it took (no window past the end: that was undefined behaviour).
TEST(RankRecord, ARunThatStoppedDuringWarmupBuildsItsMetricsWithoutAWindow) {
  RankRecord r = Timed(0.1, 0.01);
  KeepFirstSteps(r, 1);  // stopped after step 1 of 4, warmup 2
  const auto metrics = BuildMetrics({r}, 2, 100, 10, 5);
  for (const auto& m : metrics) {
    if (m.name == "step_time") {
      EXPECT_TRUE(m.samples.empty());
    }
  }
}

TEST(RankRecord, StragglerRatioOfOneRankIsExactlyOne) {
  RankRecord alone(4);
  alone.step_seconds = {1, 0.3, 0.1, 0.7};
  alone.optimizer_seconds = alone.grad_sync_seconds = {0.01, 0.01, 0.01, 0.01};
  const auto m = BuildMetrics({alone}, 1, 100, 10, 5);
  EXPECT_EQ(Find(m, "straggler_ratio").samples, std::vector<double>{1.0});
  EXPECT_EQ(Find(m, "straggler_ratio").per_rank, std::vector<double>{1.0});
  EXPECT_EQ(Find(m, "step_time_busy").per_rank, std::vector<double>{0.3});  // no communicator: busy = step
}

// warmup auto: the step-time metrics start at the detected steady state while the kernel
// trace (which starts after the nominal warmup) keeps its own window.
TEST(RankRecord, StepMetricsStartWhereTheyAreToldKernelMetricsAtWarmup) {
  RankRecord a = FakeGpuRank(1, 1, 0);
  a.step_seconds = {0.4, 0.2, 0.1};
  a.kernel_comm_seconds = {-1, 0.01, 0.02};
  a.kernel_exposed_seconds = {-1, 0.0, 0.0};
  a.kernel_compute_seconds = {-1, 0.05, 0.05};
  const auto m = BuildMetrics({a}, 1, 100, 10, 5, 2);
  EXPECT_EQ(Find(m, "step_time").samples, std::vector<double>{0.1});
  EXPECT_EQ(Find(m, "step_time_busy").samples, std::vector<double>{0.1});
  EXPECT_EQ(Find(m, "kernel_comm_time").samples, (std::vector<double>{0.01, 0.02}));
  EXPECT_EQ(Find(BuildMetrics({a}, 1, 100, 10, 5, 0), "step_time").samples, (std::vector<double>{0.4, 0.2, 0.1}));
  RankRecord b = a;
  b.step_seconds = {0.3, 0.5, 0.05};
  EXPECT_EQ(SlowestRankStepSeconds({a, b}), (std::vector<double>{0.4, 0.5, 0.1}));
}

// Every metric is declared once, with a kind and direction gates understand, and every per-rank
// figure the table names travels in the packed record.
TEST(RankRecord, MetricTableDeclaresEachMetricOnceAndPacksItsFields) {
  std::set<std::string> names;
  RankRecord r(2);
  double value = 1;
  for (const MetricRow& row : MetricTable()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_TRUE(std::string(row.kind) == "exact" || std::string(row.kind) == "sampled") << row.name;
    EXPECT_TRUE(std::string(row.better) == "lower" || std::string(row.better) == "higher") << row.name;
    EXPECT_TRUE(row.field || row.build) << row.name;
    if (row.field) r.*row.field = value++;
  }
  const RankRecord back = RankRecord::Unpack(r.pack(), 2);
  for (const MetricRow& row : MetricTable()) {
    if (row.field) {
      EXPECT_EQ(back.*row.field, r.*row.field) << row.name;
    }
  }
  EXPECT_EQ(Declared("grad_blowup").kind, "exact");
  EXPECT_EQ(Declared("tokens_per_s").better, "higher");
}

}  // namespace
}  // namespace shardbench
