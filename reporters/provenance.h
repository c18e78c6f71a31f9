// Where a result came from: build (git sha, dirty, compiler, torch/CUDA/NCCL), host (name,
// CPU model, GPU), job (world size, backend) and the environment variables that change
// behaviour. Recorded in every results file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace shardbench {

nlohmann::json CollectProvenance(int world_size, const std::string& backend);
// Peak resident set size of this process (VmHWM), bytes.
int64_t HostRssPeakBytes();
// Restarts VmHWM from the current RSS (Linux: "5" written to /proc/self/clear_refs), so that a
// later HostRssPeakBytes() is the peak of what ran since. False when the kernel refused.
bool ResetHostRssPeak();
std::string NowIso8601Utc();

}  // namespace shardbench
