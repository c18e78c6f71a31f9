// CPU collectives on Debian's Gloo (libgloo-dev), rendezvous through the c10d TCPStore.
// Why Gloo, and how it coexists with the copy of Gloo inside libtorch_cpu: engine/comm/README.md.
#pragma once

#include <memory>

#include "engine/comm/communicator.h"
#include "engine/comm/rendezvous.h"

namespace shardbench::comm {

// Connects a full mesh of Gloo TCP pairs among all ranks. The store must be the one returned
// by Rendezvous() (all ranks already joined).
std::unique_ptr<Communicator> CreateGlooCommunicator(const RankEnv& env, c10::intrusive_ptr<c10d::Store> store,
                                                     CommOptions options);

// Where the dynamic linker resolved our Gloo entry points: must be Debian's libgloo, not the
// (newer, ABI-different) copy exported by libtorch_cpu. Returns the library path.
std::string GlooProviderLibrary();

}  // namespace shardbench::comm
