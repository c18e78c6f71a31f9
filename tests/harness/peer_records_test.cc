// A peer's records read into our RankRecords (harness/peer_records.h) and assembled by the one
// assembly (harness/run_assembly.h): what the peer measured becomes the metric-table metric of
// the same name; what it did not is listed with why, never written as zero; a malformed file is
// our bug (internal error), not the user's input.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "harness/peer_records.h"
#include "harness/run_assembly.h"
#include "harness/scenario/scenario_parser.h"
#include "reporters/provenance.h"

namespace shardbench {
namespace {

nlohmann::json Rank(double grads) {
  return {{"series", {{"step_seconds", {0.5, 0.25, 0.25}}, {"loss", {3.0, 2.5, 2.0}}, {"local_loss", {3.0, 2.5, 2.0}},
                      {"optimizer_seconds", {0.1, 0.05, 0.05}}}},
          {"figures", {{"init_time", 1.5}, {"host_rss_peak", 1e9}, {"init_host_rss_peak", 2e9}}},
          {"held", {{"params_sharded", 4096}, {"params_unsharded", 0}, {"grads", grads}, {"optim_state", 8192}}},
          {"param_bytes_by_dtype", {{"fp32", 4096}}},
          {"comm", {{"all_gather", {{"count", 10}, {"bytes", 40960}, {"seconds", nullptr}}}}}};
}

nlohmann::json Records() {
  return {{"format", kPeerRecordsFormat}, {"started_at", "2026-12-06T00:00:00Z"},
          {"versions", {{"torch", "2.11.0"}}}, {"refusal", nullptr}, {"peer_warnings", {"layers.0 mixes"}},
          {"params_total", 100}, {"params_trainable", 10}, {"trainable_bytes", 4096}, {"checks", nlohmann::json::array()},
          {"not_measured", {{"peak_allocated", "no allocator statistics"}, {"comm_exposed_time", "no spans"}}},
          {"sampled", {{"grad_bytes", "varies here"}}},
          {"ranks", {Rank(2048), Rank(4096)}}};
}

const Metric* Find(const RunResult& r, const std::string& name) {
  auto it = std::find_if(r.metrics.begin(), r.metrics.end(), [&](const Metric& m) { return m.name == name; });
  return it == r.metrics.end() ? nullptr : &*it;
}

TEST(PeerRecords, MeasuredFiguresBecomeTheTablesMetricsAndTheRestIsListedWithWhy) {
  const PeerRun peer = ReadPeerRecords(Records(), "records.json");
  ASSERT_EQ(peer.ranks.size(), 2u);
  Scenario s = ParseScenario(YAML::Load("name: t\nmodel: tiny\nworld_size: 2\ntrain: {steps: 2, warmup_steps: 1}\n"
                                        "checks: {max_grad_blowup: 1.1}\n"),
                             "t.yaml");
  RunFrame frame;
  frame.peer = true;
  frame.trainable_bytes = peer.trainable_bytes;
  frame.not_measured = peer.not_measured;
  frame.sampled_here = peer.sampled;
  const RunResult r = AssembleRunResult(s, peer.ranks, frame);
  EXPECT_EQ(Find(r, "grad_bytes")->kind, "sampled");  // exact in the table, varying on this engine
  EXPECT_EQ(Find(r, "param_bytes")->kind, "exact");
  ASSERT_NE(Find(r, "grad_bytes"), nullptr);
  EXPECT_EQ(Find(r, "grad_bytes")->per_rank, (std::vector<double>{2048, 4096}));
  EXPECT_EQ(Find(r, "comm_all_gather_bytes")->samples, (std::vector<double>{40960}));
  EXPECT_NE(Find(r, "optimizer_share"), nullptr);
  // Not measured: never a metric, always listed, with the peer's reason where it gave one.
  for (const char* absent : {"peak_allocated", "grad_sync_time", "params_unsharded_peak_bytes", "comm_all_gather_time",
                             "step_time_busy", "comm_exposed_time"}) {
    EXPECT_EQ(Find(r, absent), nullptr) << absent;
    EXPECT_TRUE(std::any_of(r.not_measured.begin(), r.not_measured.end(),
                            [&](const NotMeasured& n) { return n.name == absent; }))
        << absent;
  }
  for (const auto& n : r.not_measured) {
    if (n.name == "peak_allocated") {
      EXPECT_EQ(n.why, "no allocator statistics");
    }
  }
  EXPECT_TRUE(r.memory[0].categories.empty());  // the allocator's breakdown: not measured, not zeros
  EXPECT_FALSE(r.memory[0].peak_allocated.has_value());
  EXPECT_EQ(r.memory[1].held.at("grads"), 4096);
  EXPECT_TRUE(r.memory_model["total"]["measured"].is_null());
  // grad_memory judges the peer's bytes as ours: rank 1 holds 4096 for 2048 owned.
  const Check& grad = r.checks.back();
  EXPECT_EQ(grad.name, "grad_memory");
  EXPECT_FALSE(grad.passed);
  EXPECT_NE(grad.detail.find("4096 gradient bytes for 2048 trainable bytes"), std::string::npos) << grad.detail;
  EXPECT_EQ(r.status, "failed");
  // The written result carries both lists; the reader gives them back.
  const nlohmann::json j = ToJson(r);
  EXPECT_EQ(j["not_measured"].size(), r.not_measured.size());
}

TEST(PeerRecords, AMalformedFileIsOurBugNotTheUsersInput) {
  nlohmann::json bad = Records();
  bad["ranks"][1]["held"]["gradients"] = 1;  // not a category
  EXPECT_THROW(ReadPeerRecords(bad, "records.json"), std::logic_error);
  nlohmann::json misnamed = Records();
  misnamed["not_measured"]["comm_exposed_seconds"] = "a name the metric table lacks";
  EXPECT_THROW(ReadPeerRecords(misnamed, "records.json"), std::logic_error);
  EXPECT_TRUE(IsTableMetric("comm_all_gather_time"));  // a row's pattern filled in
  EXPECT_FALSE(IsTableMetric("comm__time"));
  bad = Records();
  bad["ranks"][0]["series"]["step_seconds"] = {0.5};  // fewer steps than the loss
  EXPECT_THROW(ReadPeerRecords(bad, "records.json"), std::logic_error);
  bad = Records();
  bad["format"] = "other/2";
  EXPECT_THROW(ReadPeerRecords(bad, "records.json"), std::logic_error);
}

TEST(PeerRecords, ARefusalCarriesPyTorchsWordsAndNoRanks) {
  nlohmann::json refused = {{"format", kPeerRecordsFormat}, {"started_at", "2026-12-06T00:00:00Z"},
                            {"versions", nlohmann::json::object()}, {"refusal", "rank 0: ValueError: Must flatten"},
                            {"peer_warnings", nlohmann::json::array()}};
  const PeerRun peer = ReadPeerRecords(refused, "records.json");
  ASSERT_TRUE(peer.refusal.has_value());
  EXPECT_EQ(*peer.refusal, "rank 0: ValueError: Must flatten");
  EXPECT_TRUE(peer.ranks.empty());
}

TEST(HostPeak, TheResetDropsWhatWasFreedBefore) {
  std::vector<char> ballast(256u << 20, 1);  // every page touched
  const int64_t with_ballast = HostRssPeakBytes();
  std::vector<char>().swap(ballast);
  ASSERT_TRUE(ResetHostRssPeak());
  EXPECT_LT(HostRssPeakBytes(), with_ballast - (200 << 20));
}

}  // namespace
}  // namespace shardbench
