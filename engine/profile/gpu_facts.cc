#include "engine/profile/gpu_facts.h"

#include <fstream>
#include <regex>
#include <sstream>

#include "engine/common/error.h"

#ifdef SHARDBENCH_WITH_CUDA
#include <cuda_runtime_api.h>

#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#endif

namespace shardbench::profile {

std::string NvidiaDriverVersionIn(const std::string& proc_text) {
  static const std::regex kVersion(R"(Kernel Module(?: for [^ ]+)?\s+([0-9]+(?:\.[0-9]+)+))");
  std::smatch m;
  return std::regex_search(proc_text, m, kVersion) ? m[1].str() : "";
}

std::string CudaVersionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

#ifdef SHARDBENCH_WITH_CUDA

GpuFacts ReadGpuFacts(int device_index) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device_index) != cudaSuccess) {
    throw InfraError("CUDA device " + std::to_string(device_index) + ": its properties could not be read");
  }
  GpuFacts f;
  f.name = prop.name;
  f.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  std::ifstream in("/proc/driver/nvidia/version");
  std::stringstream text;
  text << in.rdbuf();
  f.driver = NvidiaDriverVersionIn(text.str());
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) f.cuda_runtime = CudaVersionText(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess) f.cuda_driver = CudaVersionText(driver);
  return f;
}

std::string NcclVersion() { return c10d::getNcclVersion(); }

#else

GpuFacts ReadGpuFacts(int device_index) {
  throw InfraError("CUDA device " + std::to_string(device_index) + ": this build has no GPU path");
}

std::string NcclVersion() { return ""; }

#endif

}  // namespace shardbench::profile
