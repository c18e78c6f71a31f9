// `shardbench run <scenario.yaml> [--nproc N] [--out DIR] [key=value ...]`.
#pragma once

#include <string>
#include <vector>

namespace shardbench::cli {

struct RunArgs {
  std::string target;                  // a scenario file
  int nproc = 0;                       // 0: the scenario's world_size
  std::string out_dir;                 // default results/<name>-<timestamp>
  std::vector<std::string> overrides;  // key=value
  bool quiet = false;
};

// Returns the process exit code (DESIGN.md: 0 ok, 1 check failed, 2 bad input, 3 infra).
int RunCommand(const RunArgs& args, const std::string& self_exe);

}  // namespace shardbench::cli
