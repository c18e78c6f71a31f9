#include "tests/support/rank_test.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/multi_rank.h"
#include "tests/ranks/worker_checks.h"
#include "tests/ranks/worker_parity.h"

namespace shardbench::testing {
namespace {

// Set in the launched copies: the full name of the one test they run as ranks.
constexpr const char* kRankTestEnv = "SHARDBENCH_RANK_TEST";

std::string CurrentTestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw std::runtime_error("rank test: cannot read /proc/self/exe");
  buf[n] = '\0';
  return buf;
}

}  // namespace

void RunOnRanks(int nproc, const std::function<void(comm::Communicator* comm)>& body, comm::LaunchSpec spec) {
  const std::string test = CurrentTestName();
  if (const char* running = std::getenv(kRankTestEnv); running && test == running) {
    auto comm = worker::ConnectFromEnv();
    body(comm.get());
    // The shared parity helpers (tests/ranks/worker_parity.h) report through worker::Expect.
    EXPECT_EQ(worker::ExitCode(), 0) << "a worker check failed on this rank (MISMATCH lines above)";
    if (comm) comm->barrier();
    return;
  }
  static int counter = 0;
  spec.nproc = nproc;
  spec.argv = {SelfExe(), "--gtest_filter=" + test, "--gtest_brief=1"};
  spec.env[kRankTestEnv] = test;
  spec.log_dir = MakeTempDir("ranks" + std::to_string(counter++));
  if (spec.timeout.count() == 0) spec.timeout = std::chrono::seconds(120);
  MultiRankRun run;
  run.result = comm::LaunchLocalRanks(spec);
  for (int r = 0; r < nproc; ++r) run.logs.push_back(ReadFile(spec.log_dir + "/rank" + std::to_string(r) + ".log"));
  EXPECT_TRUE(run.result.ok) << Describe(run);
}

}  // namespace shardbench::testing
