// This process as one rank of a job an outside launcher started (torchrun, srun, or our own
// `--nnodes` launcher): the whole target runs here, instance by instance and repetition by
// repetition in lockstep with the other ranks. One TCPStore (served by rank 0 at
// MASTER_ADDR:MASTER_PORT) lives as long as the job; each repetition's communicator joins
// under its own prefix. Rank 0 alone writes the run directory and decides (stop, the exit
// code); the other ranks learn its decisions through the store.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/comm/rendezvous.h"
#include "harness/repetition_launch.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario_runner.h"

namespace shardbench {

class JobRank {
 public:
  // Joins the job's store; InfraError naming the ranks that did not join within `timeout`.
  JobRank(const comm::RankEnv& env, std::chrono::milliseconds timeout);
  ~JobRank();

  const comm::RankEnv& env() const { return env_; }
  bool writer() const { return env_.rank == 0; }

  // Rank 0's `value` on every rank (the others wait for it).
  std::string Broadcast(const std::string& name, const std::string& value);

  // Every rank resolved the target into `plan` (its instances, resolved); InputError on every
  // rank naming the ranks whose plan differs from rank 0's, and the first instance that does.
  void AgreeOnPlan(const std::vector<std::string>& instance_names, const std::vector<std::string>& resolved);

  // Rank 0 creates `out_dir` and leaves a mark in it; every rank looks for it. The ranks that
  // cannot see it (another node without a shared filesystem) are remembered: an instance with
  // a checkpoint (every rank writes, the checks read back) is then refused naming them, instead
  // of failing later on a missing file.
  void CheckSharedDirectory(const std::string& out_dir);

  // Runs one repetition of `s` on this rank (rank 0 writes rep_dir/result.json). Every rank
  // returns the same outcome: the worst of all ranks', with the failing rank's message. A rank
  // that stops answering (its heartbeat stalls: process or node gone) is InfraError naming it.
  LaunchOutcome RunRepetition(const Scenario& s, const std::string& rep_dir,
                              const std::function<void(const StepProgress&)>& on_step);

 private:
  // Waits until every rank has set `prefix`<rank>, or names those whose heartbeat stalled.
  void WaitForAll(const std::string& prefix, std::chrono::milliseconds bound, const std::string& what);
  // Waits until each rank's key (rank -> key) is set; InfraError naming the ranks whose
  // heartbeat stalled meanwhile, those still working after `bound`, or a lost store.
  void WaitForKeys(const std::map<int, std::string>& keys, std::chrono::milliseconds bound, const std::string& what);
  void Beat();

  comm::RankEnv env_;
  c10::intrusive_ptr<c10d::Store> store_;
  int64_t repetitions_ = 0;
  std::string out_dir_;
  std::vector<int> blind_ranks_;  // cannot see rank 0's files under out_dir_  // every rank runs the same sequence, so a counter names each one
  bool lost_ranks_ = false;  // some rank's heartbeat stalled: nobody waits for it to leave
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

}  // namespace shardbench
