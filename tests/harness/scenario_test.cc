// Scenario files: strict parsing (file, line, key, expected, nearest key), overrides, and the
// resolved form `shardbench show` prints.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/common/error.h"
#include "harness/peer_env.h"
#include "harness/peer_launch.h"
#include "harness/scenario/engine_registry.h"
#include "harness/scenario/scenario_matrix.h"
#include "harness/scenario/scenario_parser.h"
#include "harness/suite.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = testing::MakeTempDir("scenarios_" + name) + "/" + name + ".yaml";
  std::ofstream(path) << text;
  return path;
}

using testing::InputErrorOf;
const auto& ErrorOf = InputErrorOf;

TEST(Scenario, ShippedFilesParse) {
  for (const char* f : {"smoke.yaml", "flat_lora.yaml"}) {
    Scenario s = LoadScenarioFile(std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/" + f);
    EXPECT_FALSE(s.name.empty());
  }
  Scenario s = LoadScenarioFile(std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/flat_lora.yaml");
  EXPECT_EQ(s.engine, Engine::kFlat);
  EXPECT_TRUE(s.lora.enabled);
  EXPECT_EQ(s.lora.targets.size(), 7u);
  EXPECT_EQ(s.sharding.wrap_policy, shard::WrapPolicyKind::kTransformerBlock);
  EXPECT_EQ(s.world_size, 2);
}

TEST(Scenario, DefaultsAreExplicitAndNameComesFromFile) {
  Scenario s = LoadScenarioFile(Write("minimal", "model: tiny\n"));
  EXPECT_EQ(s.name, "minimal");
  EXPECT_EQ(s.engine, Engine::kReference);
  EXPECT_EQ(s.train.batch_size, 4);
  EXPECT_TRUE(s.sharding.use_orig_params);
  EXPECT_EQ(s.optimizer.build, OptimizerBuild::kAfterWrap);
}

TEST(Scenario, UnknownKeyNamesFileLineAndNearestKey) {
  const std::string path = Write("typo", "model: tiny\ntrain:\n  batch_size: 2\n  stpes: 5\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(path); }),
            path + ":4: unknown key 'train.stpes' (did you mean 'train.steps'?)");
  const std::string top = Write("typo_top", "modle: tiny\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(top); }), top + ":1: unknown key 'modle' (did you mean 'model'?)");
}

TEST(Scenario, WrongTypeSaysWhatWasExpected) {
  const std::string path = Write("types", "train:\n  steps: many\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(path); }),
            path + ":2: key 'train.steps': expected an integer from 1 to 2147483647, got 'many'");
  const std::string neg = Write("neg", "world_size: 0\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(neg); }), neg + ":1: key 'world_size': expected an integer from 1 to 65536, got 0");
  const std::string choice = Write("choice", "engine: fsdp3\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(choice); }),
            choice + ":1: key 'engine': expected one of reference, flat, per_param, torch_fsdp1, torch_fsdp2, accelerate, torchtune, got 'fsdp3'");
  const std::string section = Write("section", "train: 5\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(section); }),
            section + ":1: key 'train': expected a mapping of train.* keys");
}

TEST(Scenario, ImpossibleValuesAreRejected) {
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(Write("model", "model: gpt5\n")); }).find("not a named config"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(Write("lora", "lora:\n  enabled: true\n  targets: [qkv]\n")); })
                .find("'qkv' is not a projection"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(Write("yaml", "train: [\n")); }).find("not valid YAML"), std::string::npos);
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile("/nonexistent/x.yaml"); }), "/nonexistent/x.yaml: no such scenario file");
}

TEST(Scenario, CheckpointChecksNeedAFittingCheckpoint) {
  const std::string file = Write("ckpt", "lora:\n  enabled: true\ntrain:\n  steps: 4\n  warmup_steps: 1\n");
  auto error = [&](std::vector<std::string> overrides) { return ErrorOf([&] { LoadScenarioFile(file, overrides); }); };
  EXPECT_NE(error({"checks.state_dict_roundtrip=true"}).find("need a checkpoint: set checkpoint.type"), std::string::npos);
  EXPECT_NE(error({"checkpoint.type=adapter", "lora.enabled=false"}).find("lora.enabled is false"), std::string::npos);
  EXPECT_NE(error({"checkpoint.type=full", "checkpoint.save_step=6"}).find("beyond the run's 5 steps"), std::string::npos);
  EXPECT_NE(error({"checkpoint.type=full", "checks.resume=true"}).find("save_step between 1 and 4"), std::string::npos);
  EXPECT_NE(error({"checkpoint.type=adapter", "checkpoint.save_step=2", "checks.resume=true"}).find("an adapter export has none"),
            std::string::npos)
      << error({"checkpoint.type=adapter", "checkpoint.save_step=2", "checks.resume=true"});
  EXPECT_NE(error({"failpoints=[local_load_shift, nope]"}).find("unknown failpoint 'nope' (known: local_load_shift"),
            std::string::npos)
      << error({"failpoints=[local_load_shift, nope]"});
  const Scenario ok = LoadScenarioFile(file, {"checkpoint.type=sharded", "checkpoint.save_step=2", "checks.resume=true",
                                              "failpoints=[optim_load_drop_step]"});
  EXPECT_EQ(ok.checkpoint.type, CheckpointType::kSharded);
  EXPECT_EQ(ok.failpoints, std::vector<std::string>{"optim_load_drop_step"});
}

TEST(Scenario, EngineOptionsTheEngineCannotHonourAreRefused) {
  const std::string file = Write("engine_opts", "lora:\n  enabled: true\n");
  auto error = [&](std::vector<std::string> overrides) { return ErrorOf([&] { LoadScenarioFile(file, overrides); }); };
  EXPECT_NE(error({"engine=reference", "sharding.forward_prefetch=true"}).find("the reference engine gathers nothing"),
            std::string::npos);
  EXPECT_NE(error({"model_dtype=int8"}).find("model_dtype"), std::string::npos) << error({"model_dtype=int8"});
  EXPECT_NE(error({"upcast=frozen"}).find("upcast"), std::string::npos) << error({"upcast=frozen"});
  EXPECT_NE(error({"profile.kernel_trace=true"}).find("profile.kernel_trace records GPU kernels with CUPTI: it needs backend nccl"),
            std::string::npos);
  for (const std::string engine : {"flat", "per_param"}) {
    const Scenario ok = LoadScenarioFile(file, {"engine=" + engine, "sharding.forward_prefetch=true",
                                                "sharding.backward_prefetch=true", "model_dtype=bf16", "upcast=all"});
    EXPECT_TRUE(ok.sharding.forward_prefetch && ok.sharding.backward_prefetch) << engine;
    EXPECT_EQ(ok.model_dtype, at::kBFloat16);
    EXPECT_EQ(ok.upcast, Upcast::kAll);
  }
}

TEST(Scenario, OverridesApplyInOrderAndAreRecorded) {
  Scenario s = LoadScenarioFile(Write("ov", "model: tiny\n"),
                                {"train.steps=7", "lora.enabled=true", "lora.targets=[q_proj,k_proj]", "train.steps=9"});
  EXPECT_EQ(s.train.steps, 9);
  EXPECT_TRUE(s.lora.enabled);
  EXPECT_EQ(s.lora.targets, (std::vector<std::string>{"q_proj", "k_proj"}));
  EXPECT_EQ(s.overrides.size(), 4u);
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(Write("ov2", "model: tiny\n"), {"train.step=3"}); }),
            "override 'train.step=3': unknown key 'train.step' (did you mean 'train.steps'?)");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(Write("ov3", "model: tiny\n"), {"steps"}); }),
            "override 'steps': expected key=value (e.g. train.steps=5)");
}

TEST(Scenario, ResolvedFormParsesBackToTheSameScenario) {
  Scenario s = LoadScenarioFile(std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/flat_lora.yaml", {"train.lr=3e-4"});
  YAML::Node resolved = ScenarioToYaml(s);
  Scenario again = ParseScenario(resolved, "resolved");
  EXPECT_EQ(YAML::Dump(ScenarioToYaml(again)), YAML::Dump(resolved));
  EXPECT_DOUBLE_EQ(again.train.lr, 3e-4);
  // Numbers as written, not yaml-cpp's 17 digits (1.0000000000000001e-05); an exponent keeps a
  // '.' so that PyYAML (the peers) reads a float; and they read back to the same double.
  EXPECT_EQ(resolved["train"]["lr"].Scalar(), "3.0e-04");
  EXPECT_EQ(resolved["checks"]["loss_rtol"].Scalar(), "1.0e-05");
  EXPECT_EQ(again.checks.loss_rtol, 1e-5);
  EXPECT_EQ(again.train.lr, 3e-4);
}

}  // namespace
}  // namespace shardbench

namespace shardbench {
namespace {

// warmup_steps: auto runs the nominal warmup for everything that resets after it, and is
// written back as `auto`; any other word is still a named error.
TEST(Scenario, WarmupStepsAcceptsAutoAndNothingElseThatIsNotANumber) {
  Scenario s = LoadScenarioFile(Write("auto", "model: tiny\ntrain:\n  warmup_steps: auto\n"));
  EXPECT_TRUE(s.train.warmup_auto);
  EXPECT_EQ(s.train.warmup_steps, kAutoWarmupSteps);
  const YAML::Node resolved = ScenarioToYaml(s);
  EXPECT_EQ(resolved["train"]["warmup_steps"].as<std::string>(), "auto");
  Scenario again = ParseScenario(resolved, "resolved");
  EXPECT_TRUE(again.train.warmup_auto);
  EXPECT_EQ(YAML::Dump(ScenarioToYaml(again)), YAML::Dump(resolved));
  Scenario fixed = LoadScenarioFile(Write("auto_override", "model: tiny\n"), {"train.warmup_steps=auto", "train.warmup_steps=3"});
  EXPECT_FALSE(fixed.train.warmup_auto);  // the last override wins
  EXPECT_EQ(fixed.train.warmup_steps, 3);
  const std::string soon = Write("soon", "model: tiny\ntrain:\n  warmup_steps: soon\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioFile(soon); }),
            soon + ":3: key 'train.warmup_steps': expected an integer >= 0 or auto, got 'soon'");
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(Write("peer", "model: tiny\nengine: torch_fsdp2\n"), {"train.warmup_steps=auto"}); })
                .find("train.warmup_steps=auto is not mapped onto the peer"),
            std::string::npos);
}

TEST(PeerScenario, CheckpointKindsThePeerSavesAreAcceptedOthersNamed) {
  const std::string peer = Write("peer_checkpoint", "model: tiny\nengine: torch_fsdp2\nlora:\n  enabled: true\n");
  for (const char* kind : {"full", "sharded", "adapter"}) {
    Scenario s = LoadScenarioFile(peer, {std::string("checkpoint.type=") + kind, "checks.state_dict_roundtrip=true"});
    EXPECT_STREQ(CheckpointTypeName(s.checkpoint.type), kind);
  }
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(peer, {"checkpoint.type=local"}); })
                .find("checkpoint.type=local is not mapped onto the peer: fully_shard (FSDP2) has no local state dict"),
            std::string::npos);
  // FSDP1's LOCAL_STATE_DICT is mapped.
  EXPECT_EQ(LoadScenarioFile(peer, {"engine=torch_fsdp1", "checkpoint.type=local", "checks.state_dict_roundtrip=true"})
                .checkpoint.type,
            CheckpointType::kLocal);
  EXPECT_TRUE(LoadScenarioFile(peer, {"checkpoint.type=sharded", "checkpoint.save_step=2", "checks.resume=true"})
                  .checks.resume);
}

// engine: torchtune maps what torchtune 0.6.1's distributed recipes do and names the rest; its
// peer runs in its own environment unless peer.python names another.
TEST(PeerScenario, TorchtuneMapsItsRecipeAndRunsInItsOwnEnvironment) {
  const std::string tune = Write("peer_torchtune", "model: tiny\nengine: torchtune\nlora:\n  enabled: true\n");
  const Scenario s = LoadScenarioFile(tune, {"init=meta", "activation_checkpointing=true", "checkpoint.type=full",
                                             "checks.state_dict_roundtrip=true", "model_dtype=bf16"});
  EXPECT_EQ(s.engine, Engine::kTorchtune);
  EXPECT_EQ(EngineKindLike(s), shard::EngineKind::kPerParam);
  EXPECT_EQ(PeerPython(s), ProjectDir() + "/.venv-peer-torchtune/bin/python");
  EXPECT_EQ(PeerPython(LoadScenarioFile(tune, {"peer.python=project"})), ProjectDir() + "/.venv/bin/python");
  const std::pair<const char*, const char*> refused[] = {
      {"sharding.wrap_policy=lora_separate", "sharding.wrap_policy is not mapped"},
      {"mixed_precision.param_dtype=bf16", "mixed_precision is not mapped"},
      {"optimizer.build=before_wrap", "optimizer.build=before_wrap is not mapped"},
      {"sharding.forward_prefetch=true", "sharding.forward_prefetch=true is not mapped"},
      {"checkpoint.type=sharded", "checkpoint.type is not mapped"},
      {"sharding.use_orig_params=false", "use_orig_params=false is an FSDP1 option"},
  };
  for (const auto& [override_, words] : refused) {
    const std::string error = ErrorOf([&] { LoadScenarioFile(tune, {override_}); });
    EXPECT_NE(error.find(tune + ": engine=torchtune (torchtune's FSDP2 utilities"), std::string::npos) << error;
    EXPECT_NE(error.find(words), std::string::npos) << override_ << ": " << error;
  }
}

// peer.env names an environment by what it holds, canonically; its errors name the item.
TEST(PeerScenario, PeerEnvIsCanonicalAndCheckedAgainstWhatThePeerImported) {
  const std::string peer = Write("peer_env", "model: tiny\nengine: torch_fsdp2\n");
  const Scenario s = LoadScenarioFile(peer, {"peer.env= peft=0.17.1 ,torch=2.10.0"});
  EXPECT_EQ(s.peer.env, "torch=2.10.0,peft=0.17.1");
  EXPECT_EQ(PeerPython(s), PeerEnvRoot() + "/.venv-peer-torch-2.10.0_peft-0.17.1/bin/python");
  EXPECT_EQ(YAML::Dump(ScenarioToYaml(s)["peer"]["env"]), "torch=2.10.0,peft=0.17.1");
  for (const auto& [text, words] : std::vector<std::pair<std::string, std::string>>{
           {"peer.env=numpy=2.0", "'numpy' is not a package a peer environment pins"},
           {"peer.env=torch=2.10.0,torch=2.9.1", "'torch' named twice"},
           {"peer.env=torch==2.10.0", "is not PACKAGE=VERSION"},
           {"peer.env=torch=latest", "is not PACKAGE=VERSION"}}) {
    const std::string error = ErrorOf([&] { LoadScenarioFile(peer, {text}); });
    EXPECT_NE(error.find("peer.env"), std::string::npos) << error;
    EXPECT_NE(error.find(words), std::string::npos) << text << ": " << error;
  }
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(peer, {"peer.env=torch=2.10.0", "peer.python=project"}); })
                .find("peer.env and peer.python both name the peer's Python"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(peer, {"engine=torchtune", "peer.env=torch=2.10.0"}); })
                .find("runs in its own environment"),
            std::string::npos);
  // What is asked: peer.env's releases, or torch's of a legacy name; local tags are the same release.
  EXPECT_EQ(AskedPeerVersions("", "torch-2.10.0"), (std::map<std::string, std::string>{{"torch", "2.10.0"}}));
  EXPECT_TRUE(AskedPeerVersions("", "project").empty());
  const auto asked = AskedPeerVersions(s.peer.env, "");
  EXPECT_NO_THROW(CheckImportedVersions(asked, {{"torch", "2.10.0+cu128"}, {"peft", "0.17.1"}}, "py"));
  auto refusal = [&](const nlohmann::json& imported) -> std::string {
    try {
      CheckImportedVersions(asked, imported, "py");
    } catch (const InfraError& e) {  // exit 3: the environment, not the user's input
      return e.what();
    }
    return "<no InfraError>";
  };
  EXPECT_NE(refusal({{"torch", "2.11.0+cu130"}, {"peft", "0.17.1"}}).find("imported torch 2.11.0 (asked 2.10.0)"),
            std::string::npos);
  EXPECT_NE(refusal({{"torch", "2.10.0"}}).find("peft none (asked 0.17.1)"), std::string::npos);
}

TEST(ScenarioMatrix, CartesianProductMinusExcludes) {
  auto all = LoadScenarioInstances(std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/lora_blowup.yaml");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "lora_blowup[use_orig_params=true,wrap_policy=transformer_block]");
  EXPECT_EQ(all[1].name, "lora_blowup[use_orig_params=true,wrap_policy=lora_separate]");
  EXPECT_EQ(all[2].name, "lora_blowup[use_orig_params=false,wrap_policy=lora_separate]");
  EXPECT_FALSE(all[2].sharding.use_orig_params);
  EXPECT_EQ(all[2].sharding.wrap_policy, shard::WrapPolicyKind::kLoraSeparate);
  EXPECT_EQ(all[2].base_name, "lora_blowup");
  EXPECT_EQ(all[2].matrix, (std::vector<std::pair<std::string, std::string>>{
                               {"sharding.use_orig_params", "false"}, {"sharding.wrap_policy", "lora_separate"}}));
  // Shared values stay as the file says.
  for (const auto& s : all) EXPECT_EQ(s.train.steps, 6);
}

// An override of an axis pins the axis (one value, named as such): no instances that repeat
// the pinned point under the other values' names.
TEST(ScenarioMatrix, OverridesPinAxesAndApplyAfterTheMatrix) {
  auto all = LoadScenarioInstances(std::string(SHARDBENCH_SOURCE_DIR) + "/scenarios/lora_blowup.yaml",
                                   {"sharding.wrap_policy=none", "train.steps=2"});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "lora_blowup[use_orig_params=true,wrap_policy=none]");
  EXPECT_EQ(all[1].name, "lora_blowup[use_orig_params=false,wrap_policy=none]");
  for (const auto& s : all) {
    EXPECT_EQ(s.sharding.wrap_policy, shard::WrapPolicyKind::kNone);
    EXPECT_EQ(s.train.steps, 2);
  }
}

TEST(ScenarioMatrix, BadAxesAndExcludesAreNamed) {
  const std::string axis = Write("m1", "model: tiny\nmatrix:\n  sharding.use_orig_param: [true]\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioInstances(axis); }),
            axis + ":3: matrix axis 'sharding.use_orig_param' is not a scenario key (did you mean 'sharding.use_orig_params'?)");
  const std::string empty = Write("m2", "model: tiny\nmatrix:\n  world_size: []\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioInstances(empty); }),
            empty + ":3: matrix axis 'world_size' must be a non-empty list of values");
  const std::string value = Write("m3", "model: tiny\nmatrix:\n  engine: [flat, fsdp9]\n");
  EXPECT_NE(ErrorOf([&] { LoadScenarioInstances(value); }).find("key 'engine': expected one of reference, flat, per_param, torch_fsdp1, torch_fsdp2, accelerate, torchtune, got 'fsdp9'"),
            std::string::npos);
  const std::string excl = Write("m4", "model: tiny\nmatrix:\n  world_size: [1, 2]\nexclude:\n  - {engine: flat}\n");
  EXPECT_EQ(ErrorOf([&] { LoadScenarioInstances(excl); }),
            excl + ":5: exclude names 'engine', which is not a matrix axis");
}

}  // namespace
}  // namespace shardbench
