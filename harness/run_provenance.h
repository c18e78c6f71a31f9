// A result's provenance as a rank of ours writes it: the build's and host's
// (reporters/provenance.h) with, on a GPU, the device, its driver and CUDA's versions, and with
// NCCL, the NCCL version LibTorch loaded (engine/profile/gpu_facts.h).
#pragma once

#include <c10/core/Device.h>

#include <nlohmann/json.hpp>

#include "harness/scenario/scenario.h"

namespace shardbench {

nlohmann::json RunProvenance(const Scenario& s, int world_size, const c10::Device& device);

}  // namespace shardbench
