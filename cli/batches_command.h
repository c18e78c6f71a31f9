// `shardbench batches SCENARIO`: the exact token batches each rank trains on, as JSON, so another
// implementation (peers/, a user's own script) can check it feeds the same data.
#pragma once

#include <string>
#include <vector>

namespace shardbench::cli {

struct BatchesArgs {
  std::string target;  // one scenario (no matrix)
  std::vector<std::string> overrides;
  int64_t steps = 1;   // steps 0 .. steps-1
};

int BatchesCommand(const BatchesArgs& args);

}  // namespace shardbench::cli
