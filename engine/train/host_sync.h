// Host synchronisations inside a training step, made visible: a step's device work should run
// ahead of the host until the one read it needs (the loss, which also ends the step's timer).
// CUDA's sync-debug mode (torch.cuda.set_sync_debug_mode) turns every other synchronising call
// (an .item(), a copy to the host, a nonzero) into an error; ForbidHostSyncs sets it for a
// scope (tests/engine/host_sync_test.cc, on a GPU) and AllowedHostSync lifts it around the read
// that is meant. Without the GPU path both are no-ops.
#pragma once

#ifdef SHARDBENCH_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace shardbench::train {

#ifdef SHARDBENCH_WITH_CUDA
class SyncDebugScope {
 public:
  explicit SyncDebugScope(c10::cuda::SyncDebugMode mode) : before_(c10::cuda::warning_state().get_sync_debug_mode()) {
    c10::cuda::warning_state().set_sync_debug_mode(mode);
  }
  ~SyncDebugScope() { c10::cuda::warning_state().set_sync_debug_mode(before_); }
  SyncDebugScope(const SyncDebugScope&) = delete;
  SyncDebugScope& operator=(const SyncDebugScope&) = delete;

 private:
  c10::cuda::SyncDebugMode before_;
};
struct ForbidHostSyncs : SyncDebugScope {
  ForbidHostSyncs() : SyncDebugScope(c10::cuda::SyncDebugMode::L_ERROR) {}
};
struct AllowedHostSync : SyncDebugScope {
  AllowedHostSync() : SyncDebugScope(c10::cuda::SyncDebugMode::L_DISABLED) {}
};
#else
struct ForbidHostSyncs {};
struct AllowedHostSync {};
#endif

}  // namespace shardbench::train
