// Scenarios run by a peer implementation (peers/): `engine: torch_fsdp1 | torch_fsdp2` runs the
// same scenario on PyTorch's own FSDP in Python. What the peer maps and what it refuses up front.
#pragma once

#include <string>

#include "harness/scenario/scenario.h"

namespace shardbench {

// InputError naming the field for an option the peer does not map onto PyTorch (yet), so that
// a comparison never silently runs something else on one side. `src` names the scenario.
void ValidatePeerScenario(const Scenario& s, const std::string& src);

}  // namespace shardbench
