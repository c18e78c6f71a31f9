// `shardbench run TARGET --nnodes N --node-rank K --master-addr A --master-port P --nproc M`:
// this node's M ranks of an N-node job, started torchrun's way (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Each rank runs the
// whole target as one rank of the job (harness/job_rank.h); rank 0, on node 0, writes the run
// directory. The flags' env forms are torchrun's: PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR,
// PET_MASTER_PORT, PET_NPROC_PER_NODE.
#pragma once

#include <string>

#include "harness/run_target.h"

namespace shardbench {

// True when --nnodes (or PET_NNODES) asks for this launcher.
bool WantsNodeLaunch(const RunRequest& request);

// Starts this node's ranks and waits for them. Returns the exit code: 0, or the first failing
// rank's (1 unexpected colour / failed check, 2 bad input, 3 infrastructure).
int LaunchNodeRanks(const RunRequest& request, const std::string& self_exe);

}  // namespace shardbench
