// One entry point from "backend name + rank environment" to a connected Communicator.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>
#include <string>

#include "engine/comm/communicator.h"
#include "engine/comm/rendezvous.h"

namespace shardbench::comm {

// Backends compiled into this build ("gloo", and "nccl" when built with CUDA).
std::vector<std::string> AvailableBackends();

// Rendezvous (TCPStore + join barrier) and connect. `backend` is "gloo" or "nccl";
// an unknown or uncompiled backend is an InputError; a rank that does not join is InfraError.
// `job_store`: a store the ranks already share (a job running many instances, each under its
// own prefix): only the join barrier runs in it, no new TCPStore.
std::unique_ptr<Communicator> Connect(const std::string& backend, const RankEnv& env, CommOptions options,
                                      c10::intrusive_ptr<c10d::Store> job_store = {});

}  // namespace shardbench::comm
