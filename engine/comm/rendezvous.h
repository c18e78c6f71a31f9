// Who this process is in the job (torchrun/Slurm conventions) and how ranks meet: a c10d
// TCPStore served by rank 0 at MASTER_ADDR:MASTER_PORT, then a join barrier that names any
// rank that did not arrive in time.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <map>
#include <string>

namespace c10d {
class Store;
}

namespace shardbench::comm {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  // This rank's node (GROUP_RANK, SLURM_NODEID) and how many ranks it has (LOCAL_WORLD_SIZE);
  // -1: not said by the launcher.
  int node_rank = -1;
  int local_world_size = -1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // True when RANK/WORLD_SIZE (or SLURM_PROCID/SLURM_NTASKS) were set by a launcher.
  bool from_launcher = false;
  // torchrun's agent already serves the store at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank, rank 0 included, is its client. Its keys
  // outlive a restart, so each attempt (TORCHELASTIC_RESTART_COUNT) keeps its own.
  bool agent_store = false;
  int restart_count = 0;

  // Reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT;
  // falls back to SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID. Unset: a single rank. Malformed values: InputError naming the
  // variable. `env` overrides the process environment (for tests).
  static RankEnv FromEnvironment(const std::map<std::string, std::string>* env = nullptr);
};

// Connects to (rank 0: serves) the TCPStore, then waits until every rank has joined. A single
// rank that no launcher started gets an in-memory store instead.
// Throws InfraError naming the missing ranks after `timeout`.
// The prefix Rendezvous gives `job_key` in the TCPStore (torchrun's attempt added where its
// agent serves the store), for a second connection to the same keys.
std::string StorePrefix(const RankEnv& env, const std::string& job_key);

// Every rank sets joined/<rank> in `store`, then waits for all of them; InfraError naming the
// ranks that did not join within `timeout` (or that rank 0's store itself was lost).
void JoinBarrier(c10d::Store& store, const RankEnv& env, std::chrono::milliseconds timeout);

c10::intrusive_ptr<c10d::Store> Rendezvous(const RankEnv& env, std::chrono::milliseconds timeout,
                                        const std::string& job_key = "shardbench");

bool IsLoopback(const std::string& addr);

}  // namespace shardbench::comm
