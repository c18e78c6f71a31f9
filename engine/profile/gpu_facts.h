// What names the machine a GPU result came from, for the result's provenance: the device's name
// and memory, the NVIDIA driver, the CUDA runtime and driver versions, and NCCL's version as the
// LibTorch we link loads it. Without the GPU path compiled in, only the pure helpers work.
#pragma once

#include <cstdint>
#include <string>

namespace shardbench::profile {

struct GpuFacts {
  std::string name;          // "NVIDIA H200"
  int64_t memory_bytes = 0;  // the device's total memory
  std::string driver;        // NVIDIA driver, "580.159.04" ("" when /proc/driver/nvidia/version is absent)
  std::string cuda_runtime;  // the CUDA runtime this process loaded, "13.0" ("" when not read)
  std::string cuda_driver;   // the newest CUDA the driver supports, "13.0" ("" when not read)
};

// The facts of CUDA device `device_index` (InfraError without the GPU path).
GpuFacts ReadGpuFacts(int device_index);
// NCCL's version, "2.27.7" ("" without the GPU path).
std::string NcclVersion();

// The version in /proc/driver/nvidia/version's text ("NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  580.159.04  Tue ..." -> "580.159.04"; "" when the text has none).
std::string NvidiaDriverVersionIn(const std::string& proc_text);
// CUDA's integer versions as text: 13000 -> "13.0", 12080 -> "12.8".
std::string CudaVersionText(int version);

}  // namespace shardbench::profile
