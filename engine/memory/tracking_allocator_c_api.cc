// The tracking allocator (engine/memory/tracking_allocator.h) as a small shared library with a C
// interface, for a process that is not ours: the PyTorch peer (peers/torch_fsdp/memory.py) loads
// it with ctypes after `import torch` and installs it into the libc10 its torch already loaded,
// so PyTorch's own CPU tensors are counted exactly as our engines' are: current and peak bytes,
// peaks restarted when a window opens. Only with the torch this library was built against
// (shardbench_allocator_torch_version): c10::Allocator's layout is not a stable ABI across
// releases, so the peer refuses any other version and reports the figures as not measured.
#include <torch/csrc/api/include/torch/version.h>

#include <cstdint>

#include "engine/memory/tracking_allocator.h"

extern "C" {

const char* shardbench_allocator_torch_version() { return TORCH_VERSION; }

void shardbench_allocator_install() { shardbench::memory::InstallTrackingAllocator(); }

int shardbench_allocator_installed() { return shardbench::memory::TrackingAllocatorInstalled() ? 1 : 0; }

// Peaks restart from the bytes held now.
void shardbench_allocator_reset_peaks() { shardbench::memory::ResetPeaks(); }

int64_t shardbench_allocator_current() { return shardbench::memory::Snapshot().current; }

int64_t shardbench_allocator_peak() { return shardbench::memory::Snapshot().peak; }

}  // extern "C"
