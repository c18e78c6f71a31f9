// GPU collectives through c10d::ProcessGroupNCCL (its header compiles from the torch wheel),
// one CUDA device per rank (LOCAL_RANK), rendezvous through the same TCPStore as Gloo.
#pragma once

#include <memory>

#include "engine/comm/communicator.h"
#include "engine/comm/rendezvous.h"

namespace shardbench::comm {

std::unique_ptr<Communicator> CreateNcclCommunicator(const RankEnv& env, c10::intrusive_ptr<c10d::Store> store,
                                                     CommOptions options);

}  // namespace shardbench::comm
