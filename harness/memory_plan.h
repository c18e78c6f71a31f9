// The memory and communication models for a scenario (`shardbench plan`; memory also as
// "predicted" beside "measured" in every result).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/memory/comm_model.h"
#include "engine/memory/memory_model.h"
#include "harness/scenario/scenario.h"

namespace shardbench {

memory::MemoryPrediction PlanScenarioMemory(const Scenario& s, int rank = 0);
// The collectives a rank issues per optimizer step, and their bytes (engine/memory/comm_model.h).
memory::CommPrediction PlanScenarioComm(const Scenario& s);
// Predicted per category beside what rank 0 measured (held/peaks), with predicted/measured.
nlohmann::json PredictedVsMeasured(const memory::MemoryPrediction& p, const nlohmann::json& measured_rank0);

// Before anything is allocated: InputError when a lower bound of what each rank needs on the
// host (weights at 2 bytes per parameter and LoRA adapters at 16 with their gradients and AdamW
// state, sharded over the world; one hidden state per layer
// and the logits per token) times the ranks on this machine exceeds its physical memory, with
// the numbers. GPU runs (nccl) are not judged here: device memory is the device's.
void CheckFitsThisMachine(const Scenario& s, int ranks_here);

}  // namespace shardbench
