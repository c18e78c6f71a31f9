// Model FLOPs against hand-computed values, and the communication/compute overlap computation
// on recorded kernel intervals (what CUPTI gives on a GPU), without a device.
#include <gtest/gtest.h>

#include "engine/model/llama_config.h"
#include <ATen/ATen.h>

#include "engine/common/error.h"
#include "engine/profile/kernel_overlap.h"
#include "engine/profile/kernel_trace.h"
#include "engine/profile/matmul_peak.h"
#include "engine/profile/model_flops.h"

namespace shardbench {
namespace {

TEST(ModelFlops, TinyFullFineTuneByHand) {
  // tiny: hidden 64, 2 layers, 4 heads / 2 kv heads (head_dim 16: k/v 64 -> 32), MLP 176, vocab 256.
  // Per layer: q 4096 + k 2048 + v 2048 + o 4096 + gate/up/down 3 x 11264 = 46080 weights;
  // lm_head 16384: 108544 linear weights, 6 FLOPs each; attention 12 x 2 x 64 x 64 = 98304.
  const auto f = profile::ModelFlopsPerToken(model::NamedLlamaConfig("tiny"), {}, 64);
  EXPECT_EQ(f.trainable_linear, 6 * 108544);
  EXPECT_EQ(f.frozen_linear, 0);
  EXPECT_EQ(f.attention, 98304);
  EXPECT_EQ(f.per_token(), 749568);
}

TEST(ModelFlops, TinyLoraCountsFrozenBaseAtFourAndAdaptersAtSix) {
  model::LoraConfig lora;
  lora.enabled = true;
  lora.r = 8;
  lora.targets = {"q_proj", "v_proj"};
  // Adapters per layer: q 8 x (64 + 64) = 1024, v 8 x (64 + 32) = 768; two layers: 3584.
  const auto f = profile::ModelFlopsPerToken(model::NamedLlamaConfig("tiny"), lora, 64);
  EXPECT_EQ(f.frozen_linear, 4 * 108544);
  EXPECT_EQ(f.trainable_linear, 6 * 3584);
  EXPECT_EQ(f.per_token(), 434176 + 21504 + 98304);
}

TEST(ModelFlops, Llama2_7bIsSixTimesItsLinearWeightsPlusAttention) {
  // Cross-check against the config's own parameter count: all but the embedding and the norms
  // are linear weights.
  const auto c = model::NamedLlamaConfig("llama2-7b");
  const int64_t linear = c.parameter_count() - c.vocab_size * c.hidden_size - (2 * c.num_hidden_layers + 1) * c.hidden_size;
  const auto f = profile::ModelFlopsPerToken(c, {}, 4096);
  EXPECT_EQ(f.trainable_linear, 6 * linear);
  EXPECT_EQ(f.attention, 12LL * 32 * 4096 * 4096);
}

TEST(KernelOverlap, ExposedCommunicationIsWhatNoComputeCovers) {
  using profile::KernelInterval;
  // One all-gather half hidden behind a GEMM.
  auto s = profile::SummarizeOverlap({{"sm90_xmma_gemm_bf16", 7, 0, 100}, {"ncclDevKernel_AllGather_RING_LL", 20, 50, 150}});
  EXPECT_EQ(s.communication_ns, 100);
  EXPECT_EQ(s.exposed_ns, 50);
  EXPECT_DOUBLE_EQ(s.overlap_ratio(), 0.5);
  // Overlapping collectives on two streams count once; compute on two streams too.
  s = profile::SummarizeOverlap({{"ncclKernel_ReduceScatter_Sum_f32", 20, 50, 150},
                                 {"ncclDevKernel_AllGather_RING_LL", 21, 120, 200},
                                 {"void at::native::elementwise_kernel", 7, 0, 100},
                                 {"ampere_sgemm_128x64_nn", 8, 180, 190},
                                 {"ampere_sgemm_128x64_nn", 7, 60, 80}});
  EXPECT_EQ(s.communication_ns, 150);
  EXPECT_EQ(s.compute_ns, 110);
  EXPECT_EQ(s.exposed_ns, 90);
  EXPECT_DOUBLE_EQ(s.overlap_ratio(), 0.4);
  // Nothing to hide: fully "overlapped"; nothing hidden: 0.
  EXPECT_DOUBLE_EQ(profile::SummarizeOverlap({{"gemm", 7, 0, 10}}).overlap_ratio(), 1.0);
  EXPECT_DOUBLE_EQ(profile::SummarizeOverlap({{"ncclDevKernel_AllReduce", 20, 0, 10}, {"gemm", 7, 10, 20}}).overlap_ratio(), 0.0);
}

// On a GPU the trace sees a matmul's kernel with a sane interval; without one (or without
// CUPTI in the build) starting it is a clear error, not a crash.
TEST(KernelTrace, RecordsKernelsOnAGpuAndSaysWhyNotWithoutOne) {
  if (!at::hasCUDA()) {
    try {
      profile::StartKernelTrace();
      FAIL() << "a kernel trace started without a GPU";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("CUPTI"), std::string::npos) << e.what();
    }
    return;
  }
  auto trace = profile::StartKernelTrace();
  EXPECT_THROW(profile::StartKernelTrace(), Error);  // one at a time
  const at::Tensor a = at::randn({512, 512}, at::TensorOptions().device(at::kCUDA));
  (void)at::mm(a, a);
  const auto kernels = trace->collect();
  ASSERT_FALSE(kernels.empty());
  for (const auto& k : kernels) EXPECT_GT(k.end_ns, k.start_ns) << k.name;
  EXPECT_TRUE(trace->collect().empty());  // each call takes what finished since the last
  EXPECT_EQ(trace->dropped(), 0);
}

}  // namespace
}  // namespace shardbench

namespace shardbench {
namespace {

TEST(MatmulPeak, CountsEveryTimedProductAndKnowsTheDatasheets) {
  const auto p = profile::CalibrateMatmulPeak(c10::Device(c10::kCPU), c10::kFloat, 64, /*repetitions=*/2, /*per_round=*/3);
  EXPECT_EQ(p.iterations, 6);  // the warmup round is not counted
  EXPECT_EQ(p.flops, 6 * 2.0 * 64 * 64 * 64);
  EXPECT_GT(p.best_flops_per_s, 0);
  EXPECT_EQ(profile::DatasheetBf16Peak("NVIDIA H200"), 989.4e12);
  EXPECT_EQ(profile::DatasheetBf16Peak("NVIDIA H100 PCIe"), 756e12);
  EXPECT_EQ(profile::DatasheetBf16Peak("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_FALSE(profile::DatasheetBf16Peak("AMD EPYC").has_value());
}

}  // namespace
}  // namespace shardbench
