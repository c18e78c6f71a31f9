#include "engine/comm/create_communicator.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "engine/comm/gloo_communicator.h"
#include "engine/common/error.h"
#ifdef SHARDBENCH_WITH_CUDA
#include "engine/comm/nccl_communicator.h"
#endif

namespace shardbench::comm {

std::vector<std::string> AvailableBackends() {
#ifdef SHARDBENCH_WITH_CUDA
  return {"gloo", "nccl"};
#else
  return {"gloo"};
#endif
}

std::unique_ptr<Communicator> Connect(const std::string& backend, const RankEnv& env, CommOptions options,
                                      c10::intrusive_ptr<c10d::Store> job_store) {
  if (backend != "gloo" && backend != "nccl") {
    throw InputError("backend '" + backend + "': expected gloo or nccl");
  }
#ifndef SHARDBENCH_WITH_CUDA
  if (backend == "nccl") {
    throw InputError("backend 'nccl': this build has no GPU path (configure with CUDA present or SHARDBENCH_CUDA=ON)");
  }
#endif
  c10::intrusive_ptr<c10d::Store> store;
  if (job_store) {
    store = c10::make_intrusive<c10d::PrefixStore>("shardbench/" + backend, job_store);
    JoinBarrier(*store, env, options.timeout);
  } else {
    store = Rendezvous(env, options.timeout, "shardbench/" + backend);
  }
#ifdef SHARDBENCH_WITH_CUDA
  if (backend == "nccl") return CreateNcclCommunicator(env, store, options);
#endif
  return CreateGlooCommunicator(env, store, options);
}

}  // namespace shardbench::comm
