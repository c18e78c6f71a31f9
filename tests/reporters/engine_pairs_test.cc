// Engines side by side (reporters/engine_pairs.h): pairs by shared scenario, loss parity over the
// judged steps, ratios, and each pair's exact figures with what a side did not measure.
#include <gtest/gtest.h>

#include <map>

#include "reporters/engine_pairs.h"
#include "tests/reporters/compare_fixtures.h"

namespace shardbench {
namespace {

using namespace fixtures;  // NOLINT: the fixtures are this file's vocabulary

// One engine's result of a matrix instance, for pairing.
InstanceResult EngineResult(const std::string& engine, const std::vector<double>& loss, double tokens, double rss) {
  nlohmann::json r = Result("peers[engine=" + engine + ",enabled=true]",
                            {Sampled("tokens_per_s", "higher", {tokens, tokens * 1.01, tokens * 0.99}),
                             Sampled("host_rss_peak", "lower", {rss})});
  r["scenario"]["config"]["engine"] = engine;
  r["scenario"]["config"]["checks"] = {{"loss_rtol", 1e-5}, {"loss_parity_steps", 2}};
  r["loss"] = loss;
  InstanceResult i;
  i.name = r["scenario"]["name"];
  i.result = r;
  return i;
}

TEST(EnginePairs, PairsBySharedScenarioAndJudgesLossOverTheFirstSteps) {
  ResultSet set;
  set.instances = {EngineResult("per_param", {5.0, 4.0, 3.0}, 200, 100), EngineResult("torch_fsdp2", {5.0, 4.00001, 9.0}, 100, 400),
                   EngineResult("flat", {5.0, 4.1, 3.0}, 150, 100), EngineResult("torch_fsdp1", {5.0, 4.0, 3.0}, 150, 100)};
  const auto pairs = PairEngines({&set});
  ASSERT_EQ(pairs.size(), 4u);  // per_param/fsdp2, flat/fsdp1, fsdp1/fsdp2, flat/per_param
  EXPECT_EQ(pairs[0].scenario, "peers[enabled=true]");
  EXPECT_EQ(pairs[0].engine_a, "per_param");
  EXPECT_EQ(pairs[0].engine_b, "torch_fsdp2");
  EXPECT_EQ(pairs[0].judged, 2);  // loss_parity_steps: step 2's 3.0 vs 9.0 is not judged
  EXPECT_NEAR(pairs[0].loss_max_rel, 0.00001 / 4.00001, 1e-12);
  EXPECT_TRUE(pairs[0].loss_ok());
  ASSERT_TRUE(pairs[0].tokens && pairs[0].memory);
  EXPECT_DOUBLE_EQ(pairs[0].tokens->interval.ratio, 2.0);  // a / b
  EXPECT_DOUBLE_EQ(pairs[0].memory->interval.ratio, 0.25);
  EXPECT_EQ(pairs[0].memory->metric, "host_rss_peak");
  EXPECT_EQ(pairs[1].engine_a, "flat");
  EXPECT_FALSE(pairs[1].loss_ok());  // 4.1 vs 4.0 at step 1
  EXPECT_NE(EnginePairsMarkdown(pairs).find("| per\\_param | torch\\_fsdp2 |"), std::string::npos) << EnginePairsMarkdown(pairs);
  // Two sets (ours and the peer's runs) pool; one engine alone pairs with nothing.
  ResultSet ours, theirs, lonely;
  ours.instances = {EngineResult("per_param", {5.0}, 1, 1)};
  theirs.instances = {EngineResult("torch_fsdp2", {5.0}, 1, 1)};
  EXPECT_EQ(PairEngines({&ours, &theirs}).size(), 1u);
  EXPECT_TRUE(PairEngines({&ours}).empty());
}

// Like for like: a pair lists every scenario field the two sides ran differently, leaving out
// the engine's own (engine, peer.*, accelerate.*), the checks and timeout_s.
TEST(EnginePairs, ListWhatTheTwoSidesRanDifferently) {
  InstanceResult ours = EngineResult("per_param", {5.0}, 100, 100), peer = EngineResult("torch_fsdp2", {5.0}, 100, 100);
  for (auto* i : {&ours, &peer}) {
    auto& config = i->result["scenario"]["config"];
    config["mixed_precision"] = {{"param_dtype", "bf16"}, {"reduce_dtype", "fp32"}};
    config["init"] = "meta";
    config["lora"] = {{"targets", {"q_proj", "v_proj"}}};
  }
  peer.result["scenario"]["config"]["peer"] = {{"python", "/opt/torch/.venv/bin/python"}};  // how, not what
  peer.result["scenario"]["config"]["checks"]["loss_rtol"] = 1e-3;
  ResultSet set;
  set.instances = {ours, peer};
  auto pairs = PairEngines({&set});
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_TRUE(pairs[0].like_for_like()) << ::testing::PrintToString(pairs[0].differs);
  EXPECT_EQ(pairs[0].fields_equal, 5u);  // train.steps (the fixture's), mixed_precision (2), init, lora.targets
  EXPECT_NE(EnginePairsMarkdown(pairs).find("| yes (5 fields equal) |"), std::string::npos) << EnginePairsMarkdown(pairs);

  set.instances[1].result["scenario"]["config"]["init"] = "eager";
  set.instances[1].result["scenario"]["config"]["mixed_precision"]["param_dtype"] = "fp32";
  set.instances[1].result["scenario"]["config"]["profile"] = {{"kernel_trace", false}};
  pairs = PairEngines({&set});
  EXPECT_FALSE(pairs[0].like_for_like());
  EXPECT_EQ(pairs[0].differs, (std::vector<std::string>{"init: \"meta\" vs \"eager\"",
                                                         "mixed_precision.param_dtype: \"bf16\" vs \"fp32\"",
                                                         "profile.kernel_trace: (none) vs false"}));
  EXPECT_NE(EnginePairsConsole(pairs).find("not like for like: init: \"meta\" vs \"eager\""), std::string::npos);
  EXPECT_EQ(EnginePairsJson(pairs)[0]["like_for_like"], false);
}

// Memory by category and communication side by side, exact: equal or not, a side that did not
// measure a figure says so (never 0), and PyTorch's per-unit warnings fold into one line.
TEST(EnginePairs, ExactFiguresSideBySideWithWhatASideDidNotMeasure) {
  InstanceResult ours = EngineResult("flat", {5.0, 4.0}, 100, 100), peer = EngineResult("torch_fsdp1", {5.0, 4.0}, 100, 100);
  auto exact = [](const std::string& name, double value) {
    return nlohmann::json{{"name", name}, {"unit", "bytes"}, {"better", "lower"}, {"kind", "exact"}, {"samples", {value}},
                          {"per_rank", {value, value}}, {"median", value}, {"p10", value}, {"p90", value},
                          {"min", value}, {"max", value}};
  };
  for (auto* r : {&ours.result, &peer.result}) {
    (*r)["metrics"].push_back(exact("grad_bytes", 259584));
    (*r)["metrics"].push_back(exact("comm_all_gather_bytes", r == &ours.result ? 100 : 120));
  }
  ours.result["metrics"].push_back(exact("params_unsharded_peak_bytes", 390912));
  peer.result["not_measured"] = {{{"name", "params_unsharded_peak_bytes"}, {"why", "inside PyTorch's hooks"}}};
  peer.result["peer_warnings"] = {"layers.0 has both parameters with requires_grad=True and False.",
                                  "layers.1 has both parameters with requires_grad=True and False."};
  ResultSet set;
  set.instances = {ours, peer};
  const auto pairs = PairEngines({&set});
  ASSERT_EQ(pairs.size(), 1u);
  std::map<std::string, ExactSide> by;
  for (const auto& e : pairs[0].exact) by[e.metric] = e;
  EXPECT_TRUE(by.at("grad_bytes").equal());
  EXPECT_FALSE(by.at("comm_all_gather_bytes").equal());
  EXPECT_EQ(*by.at("params_unsharded_peak_bytes").a, 390912);
  EXPECT_FALSE(by.at("params_unsharded_peak_bytes").b.has_value());
  EXPECT_TRUE(by.at("params_unsharded_peak_bytes").b_not_measured);
  ASSERT_EQ(pairs[0].warnings_b.size(), 1u);
  EXPECT_EQ(pairs[0].warnings_b[0], "<unit> has both parameters with requires_grad=True and False. (2 units: layers.0, layers.1)");
  const std::string console = EnginePairsConsole(pairs), md = EnginePairsMarkdown(pairs);
  EXPECT_NE(console.find("not measured"), std::string::npos) << console;
  EXPECT_NE(console.find("DIFFER"), std::string::npos) << console;
  EXPECT_NE(md.find("torch\\_fsdp1 warned"), std::string::npos) << md;
}

}  // namespace
}  // namespace shardbench
