// Counting instructions (profile.instructions): the dump reader, the launch under callgrind,
// the refusal outside valgrind, and the planted CPU work the gate-quality failpoints add. The
// counts themselves are checked under valgrind by tests/end_to_end/instruction_count_check.py.
#include "engine/profile/instruction_count.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "engine/common/error.h"
#include "engine/common/failpoints.h"
#include "engine/common/planted_work.h"
#include "harness/instruction_launch.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

std::string Write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(InstructionCount, ReadsTheDumpsTotalAndNotAnUnderflowedSummary) {
  const std::string dir = testing::MakeTempDir("callgrind_dump");
  // The last dump of a run whose counting was switched off: summary underflowed, totals right.
  EXPECT_EQ(profile::ReadCallgrindTotal(Write(dir, "a", "events: Ir\nsummary: 18446744073709051602\ntotals: 0\n")),
            0.0);
  EXPECT_EQ(profile::ReadCallgrindTotal(Write(dir, "b", "events: Ir\nfn=main\n1 5\ntotals: 500014\n")), 500014.0);
  EXPECT_EQ(profile::ReadCallgrindTotal(Write(dir, "c", "events: Ir\nsummary: 42\n")), 42.0);
  EXPECT_FALSE(profile::ReadCallgrindTotal(Write(dir, "d", "events: Ir\n")).has_value());
  EXPECT_FALSE(profile::ReadCallgrindTotal(dir + "/missing").has_value());
}

TEST(InstructionCount, AWindowOutsideValgrindIsAnInfrastructureErrorSayingHowToStartIt) {
  ASSERT_FALSE(profile::RunningUnderCallgrind());
  try {
    profile::InstructionWindow window("/tmp/nowhere");
    FAIL() << "a window opened outside valgrind";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("profile.instructions"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--instr-atstart=no"), std::string::npos) << e.what();
  }
}

TEST(InstructionCount, RanksStartUnderCallgrindCountingNothingUntilTheirWindow) {
  const CountedLaunch launch = CallgrindLaunch("/out/logs");
  ASSERT_GE(launch.argv_prefix.size(), 4u);
  EXPECT_NE(launch.argv_prefix[0].find("valgrind"), std::string::npos);
  const auto has = [&](const std::string& arg) {
    return std::find(launch.argv_prefix.begin(), launch.argv_prefix.end(), arg) != launch.argv_prefix.end();
  };
  EXPECT_TRUE(has("--tool=callgrind"));
  EXPECT_TRUE(has("--instr-atstart=no"));
  EXPECT_TRUE(has("--callgrind-out-file=/out/logs/callgrind.%p"));
  EXPECT_EQ(launch.env.at("OMP_NUM_THREADS"), "1");  // spinning OpenMP workers would add noise
  EXPECT_EQ(launch.env.at(kCallgrindOutVariable), "/out/logs/callgrind.%p");

  ::setenv(kCallgrindOutVariable, "/out/logs/callgrind.%p", 1);
  EXPECT_EQ(CallgrindDumpPrefix(), "/out/logs/callgrind." + std::to_string(::getpid()));
  ::unsetenv(kCallgrindOutVariable);
  EXPECT_EQ(CallgrindDumpPrefix(), "");

  const std::string path = std::getenv("PATH");
  ::setenv("PATH", "/nonexistent", 1);
  EXPECT_THROW(CallgrindLaunch("/out/logs"), InfraError);
  ::setenv("PATH", path.c_str(), 1);
}

TEST(PlantedWork, FailpointsSizeTheirWorkAsAShareOfTheReferenceStep) {
  SetScenarioFailpoints({});
  EXPECT_EQ(PlantedOptimizerIterations(), 0);
  EXPECT_EQ(PlantedCollectiveIterations(), 0);
  SetScenarioFailpoints({"slow_optimizer_5pct"});
  EXPECT_EQ(PlantedOptimizerIterations(), kReferenceStepIterations / 20);
  EXPECT_EQ(PlantedCollectiveIterations(), 0);
  SetScenarioFailpoints({"slow_collectives_20pct"});
  EXPECT_EQ(PlantedOptimizerIterations(), 0);
  // Spread over the reference step's three collectives.
  EXPECT_EQ(PlantedCollectiveIterations(), kReferenceStepIterations / 5 / 3);
  SetScenarioFailpoints({});
  PlantedWork(1000);  // returns: the chain is finite work
}

}  // namespace
}  // namespace shardbench
