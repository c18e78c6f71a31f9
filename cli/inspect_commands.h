// Commands that print what shardbench knows without running anything: `show` (resolved
// instances), `plan` (predicted memory per rank), `list` (shipped suites and scenarios) and
// `models` (named model configs).
#pragma once

#include <string>
#include <vector>

namespace shardbench::cli {

struct TargetArgs {
  std::string target;                  // suite or scenario: a file or a shipped name
  std::vector<std::string> overrides;  // key=value
};

int ShowCommand(const TargetArgs& args);
int PlanCommand(const TargetArgs& args);
int ListCommand();
int ModelsCommand();

}  // namespace shardbench::cli
