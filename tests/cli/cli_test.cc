// The shardbench command end to end: the smoke suite, exit codes for bad input, the index and
// results files, and a rank that fails a check.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/safetensors.h"
#include "engine/model/llama.h"
#include "reporters/build_info.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

using Command = testing::CliRun;
Command Shardbench(const std::string& args) { return testing::RunShardbench(args); }

nlohmann::json Load(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(Cli, SmokeSuiteRunsGreenAndWritesIndexAndResults) {
  const std::string out = testing::MakeTempDir("cli_smoke");
  const Command c = Shardbench("run smoke --quiet --out " + out + " train.steps=4");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const auto index = Load(out + "/index.json");
  ASSERT_EQ(index["instances"].size(), 2u);
  for (const auto& e : index["instances"]) {
    EXPECT_EQ(e["colour"], "green") << e.dump();
    EXPECT_TRUE(e["as_expected"].get<bool>());
    const auto r = Load(out + "/" + e["file"].get<std::string>());
    EXPECT_EQ(r["schema_version"], 1);
    EXPECT_EQ(r["status"], "ok");
    EXPECT_EQ(r["loss"].size(), 6u);  // 2 warmup + 4 measured
    EXPECT_EQ(r["provenance"]["world_size"], 2);
    EXPECT_EQ(r["provenance"]["backend"], "gloo");
  }
  // The resolved scenario each repetition ran is kept beside its results.
  EXPECT_TRUE(std::filesystem::is_regular_file(out + "/smoke_flat/rep0/scenario.yaml"));
  // And the run's own dashboard, carrying both instances.
  std::ifstream page(out + "/dashboard.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("\"smoke_flat\""), std::string::npos);
}

// Every shipped suite resolves (its scenarios parse, its overrides apply), the GPU one too: it
// only runs on a GPU machine, so this is what keeps it from rotting in between.
// --repetitions auto[:MAX] --target-mde X: launches until the gated metrics are pinned, or MAX.
TEST(Cli, AdaptiveRepetitionsStopWhenPinnedOrAtMaxAndSayWhich) {
  const std::string smoke = std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/smoke.yaml";
  const std::string args = " world_size=1 train.steps=3 checks.loss_parity=false";
  // The default policy needs 5 launches a side: 2 can never be judged, so it runs to MAX.
  const std::string capped = testing::MakeTempDir("cli_auto_max");
  Command c = Shardbench("run " + smoke + " --quiet --out " + capped + " --repetitions auto:2 --target-mde 0.5" + args);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("2 launches, reached MAX"), std::string::npos) << c.output;
  auto entry = Load(capped + "/index.json")["instances"][0];
  EXPECT_EQ(entry["repetitions"], 2);
  EXPECT_EQ(entry["adaptive"]["stopped"], "max");
  EXPECT_TRUE(entry["adaptive"]["mde"]["tokens_per_s"].is_null());  // not judgeable yet
  // A policy judging from 2 launches (bootstrap) that gates only a metric with no spread at one
  // rank (straggler_ratio is exactly 1): pinned after 2 of at most 4.
  const std::string policy = testing::MakeTempDir("cli_auto_policy") + "/p.yaml";
  std::ofstream(policy) << "defaults: {sampled: {test: bootstrap, min_samples: 2, min_effect: 0}}\n"
                        << "metrics: {\"*\": {gate: false}, straggler_ratio: {gate: true}}\n";
  const std::string pinned = testing::MakeTempDir("cli_auto_pinned");
  c = Shardbench("run " + smoke + " --quiet --out " + pinned + " --repetitions auto:4 --target-mde 0.01 --policy " + policy + args);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  entry = Load(pinned + "/index.json")["instances"][0];
  EXPECT_EQ(entry["repetitions"], 2) << entry.dump();
  EXPECT_EQ(entry["adaptive"]["stopped"], "pinned");
  EXPECT_EQ(entry["adaptive"]["mde"]["straggler_ratio"].get<double>(), 0.0);
  EXPECT_FALSE(entry["adaptive"]["mde"].contains("tokens_per_s"));  // not gated: not waited for
  // Bad input names the flag.
  EXPECT_EQ(Shardbench("run " + smoke + " --repetitions auto:x --target-mde 0.1").exit_code, 2);
  c = Shardbench("run " + smoke + " --repetitions auto");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.output.find("needs --target-mde"), std::string::npos) << c.output;
  EXPECT_EQ(Shardbench("run " + smoke + " --repetitions 3 --target-mde 0.1").exit_code, 2);
}

TEST(Cli, EveryShippedSuiteResolves) {
  int suites = 0;
  for (const auto& f : std::filesystem::directory_iterator(std::string(SHARDBENCH_SOURCE_DIR) + "/suites")) {
    if (f.path().extension() != ".yaml") continue;
    ++suites;
    const Command c = Shardbench("show " + f.path().string());
    EXPECT_EQ(c.exit_code, 0) << f.path() << ": " << c.output;
  }
  EXPECT_GE(suites, 5);
  const Command gpu = Shardbench("show gpu");
  size_t instances = 0;
  for (size_t at = gpu.output.find("\n# "); at != std::string::npos; at = gpu.output.find("\n# ", at + 1)) ++instances;
  EXPECT_EQ(gpu.output.rfind("# suite 'gpu' (", 0), 0u) << gpu.output;  // the header, then one "# name" per instance
  EXPECT_EQ(instances, 12u) << gpu.output;  // parity 4, gpu_1b 2, baseline 2, gpu_engines 4
}

// `plan` for PyTorch's FSDP plans the engine that follows its semantics: fully_shard as
// per_param, FullyShardedDataParallel as flat (not as the unsharded reference).
TEST(Cli, PlanForPeersFollowsTheirSemantics) {
  const Command c = Shardbench("plan " + std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/peers_tiny.yaml model=1b");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto figures = [&](const std::string& engine, const std::string& lora) {
    const std::string key = "peers_tiny[engine=" + engine + ",enabled=" + lora + "]";
    const auto at = c.output.find(key);
    if (at == std::string::npos) return std::string("missing " + key);
    const auto end = c.output.find('\n', at);
    const std::string row = c.output.substr(at + key.size(), end - at - key.size());
    return row.substr(row.find_first_not_of(' '));  // the names pad to one column
  };
  for (const std::string lora : {"true", "false"}) {
    EXPECT_EQ(figures("torch_fsdp2", lora), figures("per_param", lora)) << c.output;
    EXPECT_EQ(figures("torch_fsdp1", lora), figures("flat", lora)) << c.output;
  }
}

TEST(Cli, BadInputExitsTwoNamingTheProblem) {
  Command c = Shardbench("run smoke --quiet --out " + testing::MakeTempDir("cli_bad") + " train.stpes=3");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.output.find("unknown key 'train.stpes' (did you mean 'train.steps'?)"), std::string::npos) << c.output;
  c = Shardbench("run no_such_thing");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.output.find("'no_such_thing' is neither a file nor a shipped suite or scenario"), std::string::npos);
  c = Shardbench("run smoke --nproc=-1");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  c = Shardbench("frobnicate");
  EXPECT_EQ(c.exit_code, 2) << c.output;
}

TEST(Cli, OnlyRunsTheMatchingInstances) {
  const std::string out = testing::MakeTempDir("cli_only") + "/run";
  Command c = Shardbench("run smoke --only 'smoke_f*' --quiet --out " + out + " train.steps=2 train.warmup_steps=1");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const nlohmann::json index = Load(out + "/index.json");
  ASSERT_EQ(index["instances"].size(), 1u) << index.dump(2);
  EXPECT_EQ(index["instances"][0]["name"], "smoke_flat");
  // Overrides right after --only are overrides, not more globs (it once swallowed them silently).
  c = Shardbench("run smoke --only 'smoke_f*' train.steps=2 --quiet --out " + out + "3");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const nlohmann::json after = Load(out + "3/" + Load(out + "3/index.json")["instances"][0]["file"].get<std::string>());
  EXPECT_EQ(after["scenario"]["config"]["train"]["steps"], 2) << after["scenario"]["config"].dump();
  c = Shardbench("run smoke --only 'nothing*' --only other --quiet --out " + out + "2");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("--only 'nothing*', 'other' matches no instance of this target (its instances: smoke, smoke_flat"),
            std::string::npos)
      << c.output;
}

// A release matrix refuses what could not be a version comparison before running anything.
TEST(Cli, MatrixRefusesWhatIsNotAVersionComparison) {
  const std::string out = testing::MakeTempDir("cli_matrix") + "/m";
  const std::pair<std::string, std::string> cases[] = {
      {"peers_tiny --env torch=2.11.0 --env project", "ask for the same releases"},
      {"peers_tiny --env project", "give at least two --env sides"},
      {"peers_tiny --env torch=2.11.0,torch=2.10.0 --env project", "'torch' named twice"},
      {"smoke --env peft=0.17.1 --env project", "no instance runs a peer engine"},
      {"peers_tiny --bisect peft 0.15.0 0.18.1", "release 0.15.0 is not in the wheelhouse (it has: none"},
  };
  ::setenv("SHARDBENCH_WHEELS", (out + "_no_wheels").c_str(), 1);  // popen's child inherits it
  for (const auto& [args, words] : cases) {
    Command c = Shardbench("matrix " + args + " --out " + out);
    EXPECT_EQ(c.exit_code, 2) << args << ": " << c.output;
    EXPECT_NE(c.output.find(words), std::string::npos) << args << ": " << c.output;
  }
  ::unsetenv("SHARDBENCH_WHEELS");
  EXPECT_FALSE(std::filesystem::exists(out)) << "a refused matrix wrote " << out;
  // Sides read back (--reuse) that recorded the same releases (here none: our engine's runs) are
  // not a version comparison either: exit 3 after the report, which says so.
  const std::string earlier = testing::MakeTempDir("cli_matrix_reuse");
  for (const char* side : {"torch-2.9.1", "project"}) {
    ASSERT_EQ(Shardbench("run smoke --only smoke_flat --quiet --out " + earlier + "/" + side + " train.steps=1").exit_code, 0);
  }
  Command c = Shardbench("matrix peers_tiny --env torch=2.9.1 --env project --reuse " + earlier + " --out " + out);
  EXPECT_EQ(c.exit_code, 3) << c.output;
  EXPECT_NE(c.output.find("torch=2.9.1 read from " + earlier + "/torch-2.9.1 (--reuse)"), std::string::npos) << c.output;
  EXPECT_NE(testing::ReadFile(out + "/matrix.md").find("the same on both sides: not a version comparison"), std::string::npos);
}

TEST(Cli, VersionNamesTheBuild) {
  const BuildInfo& b = GetBuildInfo();
  ASSERT_FALSE(b.version.empty());
  const Command c = Shardbench("--version");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  for (const std::string& line : {"shardbench " + b.version + "\n", "commit " + b.git_sha, "torch " + b.torch_version}) {
    EXPECT_NE(c.output.find(line), std::string::npos) << line << " not in:\n" << c.output;
  }
}

// show says what it resolved and, by default, only what differs from the defaults.
TEST(Cli, ShowNamesTheTargetAndOnlyChangedFields) {
  const Command suite = Shardbench("show smoke");
  ASSERT_EQ(suite.exit_code, 0) << suite.output;
  EXPECT_EQ(suite.output.rfind("# suite 'smoke' (", 0), 0u) << suite.output;
  const Command brief = Shardbench("show " + std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/smoke.yaml train.lr=0.5");
  ASSERT_EQ(brief.exit_code, 0) << brief.output;
  EXPECT_NE(brief.output.find("# scenario '"), std::string::npos) << brief.output;
  EXPECT_NE(brief.output.find("lr: 0.5"), std::string::npos) << brief.output;
  EXPECT_EQ(brief.output.find("loss_rtol"), std::string::npos) << "a default field shown:\n" << brief.output;
  const Command all = Shardbench("show " + std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/smoke.yaml --all");
  EXPECT_NE(all.output.find("loss_rtol"), std::string::npos) << all.output;
}

// plan --json: what the table says, in bytes, for scripts.
TEST(Cli, PlanJsonHasBytesPerCategoryAndCollectives) {
  const Command c = Shardbench("plan " + std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/smoke.yaml --json world_size=2 engine=flat");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const nlohmann::json plan = nlohmann::json::parse(c.output);
  ASSERT_EQ(plan["instances"].size(), 1u);
  const auto& instance = plan["instances"][0];
  EXPECT_EQ(instance["world_size"], 2);
  EXPECT_GT(instance["memory"]["held"]["params_sharded"].get<int64_t>(), 0);
  EXPECT_GT(instance["memory"]["total"].get<int64_t>(), 0);
  EXPECT_FALSE(instance["comm_per_step"].empty()) << instance.dump();
}

TEST(Cli, RefusedCombinationExitsTwoWithPyTorchsMessage) {
  const Command c = Shardbench("run " + std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/flat_lora.yaml --quiet --out " +
                               testing::MakeTempDir("cli_refused") + " sharding.use_orig_params=false train.steps=2");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("Must flatten tensors with uniform requires_grad when use_orig_params=False"), std::string::npos)
      << c.output;
}

TEST(Cli, SilentNoLearningIsRedWithExitOne) {
  const std::string out = testing::MakeTempDir("cli_red");
  const Command c = Shardbench("run " + std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/flat_lora.yaml --quiet --out " +
                               out + " sharding.use_orig_params=false sharding.wrap_policy=lora_separate " +
                               "optimizer.build=before_wrap train.steps=3");
  EXPECT_EQ(c.exit_code, 1) << c.output;
  const auto r = Load(out + "/flat_lora.json");
  EXPECT_EQ(r["status"], "failed");
  ASSERT_EQ(r["checks"][1]["name"], "learning");  // after 'finite', which passes: nothing diverged
  EXPECT_TRUE(r["checks"][0]["passed"].get<bool>()) << r["checks"][0];
  EXPECT_FALSE(r["checks"][1]["passed"].get<bool>());
  EXPECT_NE(r["checks"][1]["detail"].get<std::string>().find("trainable unchanged: 28"), std::string::npos)
      << r["checks"][1]["detail"];
}

TEST(Cli, RunsFromAHuggingFaceCheckpointDirectory) {
  const std::string dir = testing::MakeTempDir("cli_hf_model");
  auto m = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), {}, 5, at::TensorOptions());
  model::WriteHfLlamaConfig(m->config(), dir + "/config.json");
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  int64_t bytes = 0;
  for (auto& p : m->named_parameters()) {
    tensors.push_back({p.name, *p.slot});
    bytes += p.slot->nbytes();
  }
  checkpoint::WriteSafetensors(dir + "/model.safetensors", tensors);
  const std::string out = testing::MakeTempDir("cli_hf_run");
  const Command c = Shardbench("run " + std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/smoke.yaml --quiet --out " + out +
                               " model=" + dir + " train.steps=2");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const auto r = Load(out + "/smoke.json");
  bool found = false;
  for (const auto& metric : r["metrics"]) {
    if (metric["name"] == "checkpoint_bytes_read") {
      // Every rank reads the whole base checkpoint (the reference engine holds all of it).
      EXPECT_EQ(metric["per_rank"], nlohmann::json::array({bytes, bytes}));
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Cli, ListAndShow) {
  Command c = Shardbench("list");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("smoke"), std::string::npos);
  EXPECT_NE(c.output.find("lora_blowup"), std::string::npos);
  c = Shardbench("show lora_blowup");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("# lora_blowup[use_orig_params=false,wrap_policy=lora_separate]"), std::string::npos) << c.output;
}

}  // namespace
}  // namespace shardbench

namespace shardbench {
namespace {

// Catalog case 1 (frozen + trainable params flattened together: ~3.5x the trainable bytes in
// gradients) shrunk while the blowup stays at least 2x: a smaller scenario that still shows it.
TEST(CliShrink, CatalogCase1ShrinksAndStillBlowsUp) {
  const std::string out = testing::MakeTempDir("cli_shrink");
  const std::string scenario = std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/flat_lora.yaml";
  const Command c = Shardbench("shrink " + scenario + " --metric grad_blowup --at-least 2 --out " + out +
                               " train.steps=2 checks.loss_parity=false checks.learning=false");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const auto log = Load(out + "/shrink.json");
  EXPECT_GE(log["value"].get<double>(), 2.0);
  const auto minimal = Load(out + "/minimal/index.json");
  const auto result = Load(out + "/minimal/" + minimal["instances"][0]["file"].get<std::string>());
  const auto& config = result["scenario"]["config"];
  // Smaller than the input (tiny: 2 layers, hidden 64; world size 2, seq_len 64, batch 4) in
  // every dimension the shrinker reduces, and the property holds in the kept run's own results.
  EXPECT_EQ(config["world_size"], 1) << c.output;
  EXPECT_EQ(config["model_shape"]["num_hidden_layers"], 1);
  EXPECT_LT(config["model_shape"]["hidden_size"].get<int>(), 64);
  EXPECT_LT(config["train"]["seq_len"].get<int>(), 64);
  EXPECT_EQ(config["train"]["batch_size"], 1);
  double blowup = 0;
  for (const auto& m : result["metrics"]) {
    if (m["name"] == "grad_blowup") blowup = m["median"];
  }
  EXPECT_GE(blowup, 2.0);
  // The written scenario reproduces it: it parses and names the reductions.
  std::ifstream yaml(out + "/minimal.yaml");
  const std::string text((std::istreambuf_iterator<char>(yaml)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("num_hidden_layers: 1"), std::string::npos) << text;
  const Command again = Shardbench("run " + out + "/minimal.yaml --quiet --out " + out + "/rerun");
  EXPECT_LE(again.exit_code, 1) << again.output;
  // Bad input: an unknown metric is named with the ones that exist.
  const Command bad = Shardbench("shrink " + scenario + " --metric nope --at-least 1 --out " + out + "/bad train.steps=1");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("no metric 'nope'"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace shardbench
