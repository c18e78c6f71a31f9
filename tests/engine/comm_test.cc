// Collectives across separate processes (world sizes 2 and 3), timeouts, and the launcher.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include <ATen/ATen.h>

#include "engine/comm/create_communicator.h"
#include "engine/comm/gloo_communicator.h"
#include "engine/comm/rendezvous.h"
#include "engine/common/error.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

using testing::MakeTempDir;
using testing::ReadFile;
using testing::RunRankWorker;


class CollectivesAcrossProcesses : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesAcrossProcesses, ExactResultsForEveryOperation) {
  auto run = RunRankWorker(GetParam(), {"collectives"});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CollectivesAcrossProcesses, ::testing::Values(2, 3));

TEST(CollectiveTimeout, StalledPeerEndsWithClearErrorNotHang) {
  comm::LaunchSpec spec;
  spec.env["SHARDBENCH_TEST_TIMEOUT_MS"] = "1000";
  auto run = RunRankWorker(2, {"stall-on-rank1"}, spec);
  ASSERT_FALSE(run.result.ok);
  EXPECT_EQ(run.result.failed_rank, 0) << run.result.message;
  EXPECT_EQ(run.result.ranks[0].exit_code, 3);
  EXPECT_NE(run.logs[0].find("gloo all_reduce on rank 0 of 2 failed (timeout 1000 ms"), std::string::npos)
      << run.logs[0];
  EXPECT_LT(run.seconds, 15.0);  // bounded by the 1 s timeout, far from the 20 s stall
}

TEST(RendezvousTimeout, RankThatNeverJoinsIsNamed) {
  comm::LaunchSpec spec;
  spec.env["WORLD_SIZE"] = "3";  // start 2 processes that expect 3: rank 2 never comes
  spec.env["SHARDBENCH_TEST_TIMEOUT_MS"] = "1500";
  auto run = RunRankWorker(2, {"join-only"}, spec);
  ASSERT_FALSE(run.result.ok);
  // Rank 0 serves the store and sees who is missing; rank 1 may instead report the lost store.
  EXPECT_EQ(run.result.ranks[0].exit_code, 3) << testing::Describe(run);
  const std::string& log = run.logs[0];
  EXPECT_NE(log.find("rank(s) 2 of world size 3 did not join within 1500 ms"), std::string::npos) << log;
}

TEST(Launcher, DeadRankStopsTheOthersAndIsNamed) {
  auto run = RunRankWorker(3, {"die-on-rank1"});
  ASSERT_FALSE(run.result.ok);
  EXPECT_EQ(run.result.failed_rank, 1);
  EXPECT_EQ(run.result.message, "rank 1 exited with code 7");
  EXPECT_TRUE(run.result.ranks[0].stopped_by_launcher);
  EXPECT_TRUE(run.result.ranks[2].stopped_by_launcher);
  EXPECT_LT(run.seconds, 30.0);  // not the 60 s collective timeout
}

TEST(Launcher, JobTimeoutNamesRunningRanks) {
  comm::LaunchSpec spec;
  spec.timeout = std::chrono::milliseconds(1500);
  spec.grace = std::chrono::milliseconds(200);
  spec.env["SHARDBENCH_TEST_TIMEOUT_MS"] = "60000";
  auto run = RunRankWorker(2, {"stall-on-rank1"}, spec);
  ASSERT_FALSE(run.result.ok);
  EXPECT_TRUE(run.result.timed_out);
  EXPECT_NE(run.result.message.find("ranks 0, 1 still running after 1.5"), std::string::npos) << run.result.message;
}

TEST(RankEnv, ReadsTorchrunVariables) {
  std::map<std::string, std::string> env{{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"},
                                         {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "1234"}};
  auto e = comm::RankEnv::FromEnvironment(&env);
  EXPECT_TRUE(e.from_launcher);
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.master_addr, "node7");
  EXPECT_EQ(e.master_port, 1234);
  EXPECT_EQ(e.node_rank, -1);
  EXPECT_FALSE(e.agent_store);
}

// torchrun's multi-node variables, and its agent's store: every rank a client, one key space per attempt.
TEST(RankEnv, ReadsTorchrunNodeAndAgentStore) {
  std::map<std::string, std::string> env{{"RANK", "5"},         {"WORLD_SIZE", "8"},       {"LOCAL_RANK", "1"},
                                         {"GROUP_RANK", "1"},   {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.1"},
                                         {"MASTER_PORT", "29400"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                         {"TORCHELASTIC_RESTART_COUNT", "1"}};
  auto e = comm::RankEnv::FromEnvironment(&env);
  EXPECT_EQ(e.node_rank, 1);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_TRUE(e.agent_store);
  EXPECT_EQ(e.restart_count, 1);
  EXPECT_EQ(comm::StorePrefix(e, "shardbench/job"), "shardbench/job/attempt1");
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_EQ(comm::StorePrefix(comm::RankEnv::FromEnvironment(&env), "shardbench/job"), "shardbench/job");
}

// Rank 0 serves the store on MASTER_ADDR alone (never every address unless asked): the only
// listening socket on its port, in /proc/net/tcp{,6}, is 127.0.0.1's.
TEST(Rendezvous, StoreListensOnTheMasterAddressOnly) {
  comm::RankEnv env;
  env.from_launcher = true;
  env.master_addr = "127.0.0.1";
  env.master_port = comm::PickFreePort();
  auto store = comm::Rendezvous(env, std::chrono::seconds(10));
  char port_hex[8];
  std::snprintf(port_hex, sizeof(port_hex), "%04X", env.master_port);
  std::vector<std::string> listening;  // local addresses (hex) listening on the port
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream in(ReadFile(table));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && local.substr(local.find(':') + 1) == port_hex) listening.push_back(local.substr(0, local.find(':')));
    }
  }
  EXPECT_EQ(listening, std::vector<std::string>{"0100007F"});
}

// Our --nnodes launcher gives node K's ranks torchrun's variables.
TEST(Launcher, SecondNodeRanksGetGlobalRanksAndNodeVariables) {
  comm::LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE\""};
  spec.nproc = 2;
  spec.nnodes = 3;
  spec.node_rank = 1;
  spec.master_port = 1;  // not used by the program; no port picked
  const auto dir = MakeTempDir("launcher_nodes");
  spec.log_dir = dir;
  const auto result = comm::LaunchLocalRanks(spec);
  ASSERT_TRUE(result.ok) << result.message;
  EXPECT_EQ(result.ranks[0].rank, 2);
  EXPECT_EQ(ReadFile(dir + "/rank2.log"), "2 6 0 2 1 3\n");
  EXPECT_EQ(ReadFile(dir + "/rank3.log"), "3 6 1 2 1 3\n");
}

TEST(RankEnv, FallsBackToSlurm) {
  std::map<std::string, std::string> env{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}};
  auto e = comm::RankEnv::FromEnvironment(&env);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
}

TEST(RankEnv, MalformedVariableIsNamed) {
  std::map<std::string, std::string> env{{"RANK", "x"}, {"WORLD_SIZE", "2"}};
  try {
    comm::RankEnv::FromEnvironment(&env);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "environment variable RANK='x': expected an integer >= 0");
  }
  std::map<std::string, std::string> env2{{"RANK", "2"}, {"WORLD_SIZE", "2"}};
  EXPECT_THROW(comm::RankEnv::FromEnvironment(&env2), InputError);
}

// Debian's libgloo and the Gloo copy inside libtorch_cpu share symbol names; the link order
// must bind ours to Debian's, and LibTorch must keep working in the same process.
TEST(GlooCoexistence, OurGlooIsDebiansAndTorchStillWorks) {
  EXPECT_NE(comm::GlooProviderLibrary().find("libgloo.so"), std::string::npos) << comm::GlooProviderLibrary();
  at::Tensor x = at::randn({4, 4}).requires_grad_(true);
  at::Tensor y = (x.matmul(x) * 2).sum();
  y.backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_TRUE(at::allclose(x.grad(), 2 * (at::ones({4, 4}).matmul(x.t()) + x.t().matmul(at::ones({4, 4})))));
}

// NCCL for real on one GPU (world size 1, as scripts/gpu-check.sh runs it): every collective's
// result and its exact accounting. Skipped, and said so, where no GPU is visible.
TEST(NcclCommunicator, EveryCollectiveOnOneGpu) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no GPU visible: runs in scripts/gpu-check.sh";
  auto comm = comm::Connect("nccl", comm::RankEnv{}, comm::CommOptions{std::chrono::seconds(60)});
  ASSERT_EQ(comm->backend(), "nccl");
  ASSERT_TRUE(comm->device().is_cuda());
  const auto on_gpu = at::TensorOptions().device(comm->device());
  const at::Tensor x = at::arange(6, on_gpu.dtype(at::kFloat));
  at::Tensor gathered = at::empty({6}, x.options());
  comm->all_gather(gathered, x);
  EXPECT_TRUE(at::equal(gathered, x));
  at::Tensor scattered = at::empty({6}, x.options());
  comm->reduce_scatter(scattered, x);
  EXPECT_TRUE(at::equal(scattered, x));
  at::Tensor summed = x.clone();
  comm->all_reduce(summed);
  EXPECT_TRUE(at::equal(summed, x));
  at::Tensor bf16 = x.to(at::kBFloat16);
  comm->broadcast(bf16, 0);
  comm->barrier();
  const comm::CommStats stats = comm->stats();
  EXPECT_EQ(stats[static_cast<size_t>(comm::Collective::kAllGather)].count, 1);
  EXPECT_EQ(stats[static_cast<size_t>(comm::Collective::kAllGather)].bytes, 24);
}

}  // namespace
}  // namespace shardbench
