// The communication model's arithmetic (engine/memory/comm_model.h). That its counts equal what
// the communicators count in real runs is checked end to end (tests/end_to_end/comm_plan_check.py).
#include <gtest/gtest.h>

#include "engine/memory/comm_model.h"
#include <ATen/ATen.h>

#include "engine/model/llama.h"
#include "engine/model/llama_config.h"

namespace shardbench::memory {
namespace {

using comm::Collective;

CommPrediction Volumes(int64_t gather, int64_t reduce_scatter, int64_t all_reduce) {
  CommPrediction p;
  p.per_step[static_cast<size_t>(Collective::kAllGather)] = {1, gather};
  p.per_step[static_cast<size_t>(Collective::kReduceScatter)] = {1, reduce_scatter};
  p.per_step[static_cast<size_t>(Collective::kAllReduce)] = {1, all_reduce};
  return p;
}

TEST(CommModel, RingWireBytesAreTheCollectivesShareOfTheirPayload) {
  const CommPrediction p = Volumes(1000, 1000, 100);
  EXPECT_DOUBLE_EQ(p.wire_bytes(4), 0.75 * (1000 + 1000 + 2 * 100));
  EXPECT_DOUBLE_EQ(p.wire_bytes(1), 0.0);
}

TEST(CommModel, TrafficCrossesTheInterNodeLinkOnceTheJobSpansNodes) {
  const CommPrediction p = Volumes(8e9, 0, 0);
  Links links;  // 8 GPUs a node, 3600 Gb/s within, 400 Gb/s across, 400 TFLOP/s
  const Roofline in_node = EstimateStep(p, 8, 4e14, links);
  EXPECT_DOUBLE_EQ(in_node.comm_seconds, 7.0 / 8 * 8e9 * 8 / 3600e9);
  EXPECT_DOUBLE_EQ(in_node.compute_seconds, 1.0);
  EXPECT_DOUBLE_EQ(in_node.exposed_seconds, 0.0);
  const Roofline two_nodes = EstimateStep(p, 16, 4e13, links);
  EXPECT_DOUBLE_EQ(two_nodes.comm_seconds, 15.0 / 16 * 8e9 * 8 / 400e9);
  EXPECT_DOUBLE_EQ(two_nodes.exposed_seconds, two_nodes.comm_seconds - 0.1);
}

TEST(CommModel, ReferenceAllReducesTrainableGradientsAndTheLoss) {
  CommModelInput in;
  in.layout.config = model::NamedLlamaConfig("tiny");
  in.layout.lora.enabled = true;
  in.layout.world_size = 2;
  const CommPrediction p = PredictComm(in);
  int64_t trainable = 0;
  model::LlamaForCausalLM m(in.layout.config, in.layout.lora, at::TensorOptions().device(at::kMeta));
  for (auto& t : m.named_parameters()) trainable += t.slot->requires_grad() ? t.slot->numel() : 0;
  ASSERT_GT(trainable, 0);
  // The adapters' fp32 gradients in one all-reduce, then the loss (one fp32).
  EXPECT_EQ(p[Collective::kAllReduce].count, 2);
  EXPECT_EQ(p[Collective::kAllReduce].bytes, trainable * 4 + 4);
  EXPECT_EQ(p[Collective::kAllGather].count, 0);
  in.layout.world_size = 1;
  EXPECT_EQ(PredictComm(in)[Collective::kAllReduce].count, 0);
}

}  // namespace
}  // namespace shardbench::memory
