// Every rank's string, in rank order, on every rank (torch.distributed.all_gather_object for
// text): two all-gathers, lengths then bytes. Collective; with a null communicator, {local}.
#pragma once

#include <string>
#include <vector>

#include "engine/comm/communicator.h"

namespace shardbench::comm {

std::vector<std::string> AllGatherStrings(Communicator* comm, const std::string& local);

}  // namespace shardbench::comm
