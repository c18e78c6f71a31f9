#include "harness/run_provenance.h"

#include "engine/profile/gpu_facts.h"
#include "reporters/provenance.h"

namespace shardbench {

nlohmann::json RunProvenance(const Scenario& s, int world_size, const c10::Device& device) {
  nlohmann::json p = CollectProvenance(world_size, BackendName(s.backend));
  if (device.is_cuda()) {
    const profile::GpuFacts gpu = profile::ReadGpuFacts(device.index());
    p["gpu"] = gpu.name;
    p["gpu_memory_bytes"] = gpu.memory_bytes;
    // A version that could not be read is null, never an empty or made-up one.
    auto read = [](const std::string& v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
    p["gpu_driver"] = read(gpu.driver);
    p["cuda_runtime"] = read(gpu.cuda_runtime);
    p["cuda_driver"] = read(gpu.cuda_driver);
  }
  if (s.backend == Backend::kNccl) p["nccl"] = profile::NcclVersion();
  return p;
}

}  // namespace shardbench
