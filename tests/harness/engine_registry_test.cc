// The engine registry (harness/scenario/engine_registry.h): every Engine value has exactly one
// spec, its name is what a scenario parses back to it, and ours and the peers are told apart.
#include <gtest/gtest.h>

#include <set>

#include "engine/common/error.h"
#include "harness/scenario/engine_registry.h"
#include "harness/scenario/scenario_parser.h"

namespace shardbench {
namespace {

TEST(EngineRegistry, EveryEngineHasExactlyOneSpec) {
  std::set<std::string> names;
  for (int e = 0; e <= static_cast<int>(Engine::kLast); ++e) {
    const Engine engine = static_cast<Engine>(e);
    int specs = 0;
    for (const auto& spec : EngineRegistry()) specs += spec.engine == engine;
    EXPECT_EQ(specs, 1) << "engine " << e << " needs one spec in harness/scenario/engine_registry.cc";
    const EngineSpec& spec = SpecOf(engine);
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_NE(spec.validate, nullptr) << spec.name;
    // Ours build a ShardedModel; a peer is a program; never both, never neither.
    EXPECT_NE(spec.ours.has_value(), spec.is_peer()) << spec.name;
    if (spec.ours) {
      EXPECT_EQ(*spec.ours, spec.predicted_by(Scenario{})) << spec.name;
    }
  }
  EXPECT_EQ(EngineRegistry().size(), names.size());
}

TEST(EngineRegistry, ScenarioNamesParseBackToTheirEngine) {
  for (const auto& spec : EngineRegistry()) {
    const Scenario s = ParseScenario(YAML::Load("name: x\nmodel: tiny\n"), "registry_test",
                                     {std::string("engine=") + spec.name});
    EXPECT_EQ(s.engine, spec.engine) << spec.name;
    EXPECT_STREQ(EngineName(s.engine), spec.name);
  }
  EXPECT_THROW(ParseScenario(YAML::Load("name: x\nmodel: tiny\nengine: fsdp3\n"), "registry_test", {}), InputError);
}

// accelerate follows the FSDP version its plugin wraps with: flat parameters or per-parameter.
TEST(EngineRegistry, AccelerateIsPredictedByItsFsdpVersion) {
  const auto parse = [](const std::string& version) {
    return ParseScenario(YAML::Load("name: x\nmodel: tiny\nworld_size: 2\n"), "registry_test",
                         {"engine=accelerate", "optimizer.build=before_wrap", "accelerate.fsdp_version=" + version});
  };
  EXPECT_EQ(EngineKindLike(parse("1")), shard::EngineKind::kFlat);
  EXPECT_EQ(EngineKindLike(parse("2")), shard::EngineKind::kPerParam);
  EXPECT_THROW(parse("3"), InputError);
}

}  // namespace
}  // namespace shardbench
