// Commands that print what shardbench knows without running anything: `show` (resolved
// instances), `plan` (predicted memory per rank), `list` (shipped suites and scenarios) and
// `models` (named model configs).
#pragma once

#include "engine/memory/comm_model.h"

#include <string>
#include <vector>

namespace shardbench::cli {

struct TargetArgs {
  std::string target;                  // suite or scenario: a file or a shipped name
  std::vector<std::string> overrides;  // key=value
  bool all = false;                    // show: every field, not only those that differ from the defaults
  bool json = false;                   // plan: JSON instead of tables
};

int ShowCommand(const TargetArgs& args);
// `plan`'s scale-out options: with nodes or gpus_per_node set, a table of communication per
// step against compute from 1 to 1024 GPUs (engine/memory/comm_model.h's roofline).
struct ScaleArgs {
  int nodes = 0;
  memory::Links links;
};
int PlanCommand(const TargetArgs& args, const ScaleArgs& scale);
int ListCommand();
int ModelsCommand();

}  // namespace shardbench::cli
