// What a `run` (or `shardbench rank`) is asked to do, once its command line is parsed
// (cli/main.cc), and what the command line shows of it: the one request type every process
// role reads (harness/run_target.h lists the roles).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario_runner.h"  // StepProgress

namespace shardbench {

struct RunRequest {
  std::string target;                  // suite or scenario: a file or a shipped name
  int nproc = 0;                       // 0: each scenario's world_size
  std::string out_dir;                 // default results/<name>-<timestamp>
  std::vector<std::string> overrides;  // key=value
  bool quiet = false;
  bool trace = false;   // --trace: profile.trace=true on every instance
  int repetitions = 0;  // > 0: every instance this many times (a gate's samples)
  // --repetitions auto[:MAX] --target-mde X [--policy F]: launches of each instance until the
  // policy's gated sampled metrics could catch X (reporters/adaptive_repetitions.h), at most MAX.
  std::optional<int> auto_max;
  std::optional<double> target_mde;
  std::string policy;  // empty: the default gate policy
  // --only GLOB (repeatable): the instances whose names match any of them (shell globs, as in
  // gate policies); none matching is bad input naming the instances there are.
  std::vector<std::string> only;
  // `matrix`: one side of a release matrix, "peer.env=torch=2.10.0" or "peer.python=project",
  // applied to the instances a peer environment varies (torch_fsdp1, torch_fsdp2, accelerate),
  // the others left out (ours run the same on every side; torchtune has its own environment).
  // None left is bad input.
  std::string release_side;
  // Our own launcher across nodes, torchrun's way (harness/node_launch.h): every node runs
  // `run` with the same target, nnodes, nproc and master, and its own node rank. 0: not asked
  // (PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT are the env forms).
  int nnodes = 0;
  int node_rank = -1;
  std::string master_addr;
  int master_port = 0;
};

// What the command line shows of a run (on_step and on_instance unless quiet; on_index always,
// so that a quiet run can still name what failed); the harness writes the files.
struct RunDisplay {
  std::function<void(const StepProgress&)> on_step;                                        // rank 0, every step
  std::function<void(const nlohmann::json& result, const std::string& path)> on_instance;  // merged result
  std::function<void(const nlohmann::json& index, const std::string& out_dir)> on_index;   // at the end
};

}  // namespace shardbench
