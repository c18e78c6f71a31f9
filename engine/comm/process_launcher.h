// Spawns N local ranks of a program with torchrun-style environment variables and supervises
// them: if one exits non-zero, is killed, or the job outlives its timeout, the others are
// stopped and the result names the rank. Used by `shardbench run --nproc N` and by the
// multi-process tests.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace shardbench::comm {

struct LaunchSpec {
  std::vector<std::string> argv;  // program path and arguments, the same for every rank
  int nproc = 1;  // ranks on this node
  // Across nodes, torchrun's way: every node runs a launcher with the same nnodes, nproc and
  // master, and its own node_rank; this node's ranks are node_rank * nproc + 0 .. nproc - 1.
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: pick a free port on master_addr
  // Wall-clock bound for the whole job; zero means none.
  std::chrono::milliseconds timeout{0};
  // Extra environment for every rank (after the rank variables, so it may override them;
  // the tests use that to start a rank with a wrong WORLD_SIZE, for instance).
  std::map<std::string, std::string> env;
  // Per-rank extra environment (local rank -> vars), e.g. a failpoint on one rank only.
  std::map<int, std::map<std::string, std::string>> rank_env;
  // When set, rank r's stdout and stderr go to <log_dir>/rank<r>.log instead of ours.
  std::string log_dir;
  // With log_dir set: rank 0 still writes to our stdout/stderr (the live progress line);
  // the other ranks write to their logs.
  bool rank0_to_terminal = false;
  // Time a rank gets between SIGTERM and SIGKILL when the job is being stopped.
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
};

struct RankExit {
  int rank = 0;
  int exit_code = -1;  // valid when signal == 0
  int signal = 0;      // the signal that ended it, 0 if it exited
  bool stopped_by_launcher = false;
  // A signal that stopped it (SIGSTOP, SIGTSTP; 0: not stopped) and was not followed by
  // SIGCONT: a stopped rank answers no collective, so its peers time out, and it is the cause.
  int stop_signal = 0;
};

struct LaunchResult {
  bool ok = false;
  int failed_rank = -1;  // first rank that failed, -1 if none (or on timeout)
  bool timed_out = false;
  std::string message;  // "rank 1 exited with code 3", "ranks 0, 1 still running after 30 s"
  std::vector<RankExit> ranks;
};

LaunchResult LaunchLocalRanks(const LaunchSpec& spec);
// The SIGINT or SIGTERM a launch of this process received (0: none): the launch stopped its
// ranks, and the run stops with it rather than going on to its next instance.
int InterruptReceived();

// The most ranks our launcher starts on one machine: 4 per core (at least 8), or
// SHARDBENCH_MAX_LOCAL_RANKS. More would only thrash (or exhaust the process table); a larger
// job belongs to torchrun/srun/--nnodes across machines. InputError naming `what` beyond it.
void CheckLocalRanks(int64_t ranks, const std::string& what);


// A TCP port on `addr` that was free a moment ago (bind to port 0, read it, close).
int PickFreePort(const std::string& addr = "127.0.0.1");

}  // namespace shardbench::comm
