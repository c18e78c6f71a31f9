// `shardbench shrink SCENARIO --metric M --at-least X [--out DIR] [key=value ...]`: the smallest
// scenario (harness/shrink.h) whose metric M stays at least X. Writes DIR/minimal.yaml, the
// minimal run's results in DIR/minimal/, every attempt in DIR/attempt-NN/ and DIR/shrink.json.
#pragma once

#include <string>
#include <vector>

namespace shardbench::cli {

struct ShrinkArgs {
  std::string target;
  std::string metric;
  double at_least = 0;
  std::string out_dir;
  int max_runs = 60;
  std::vector<std::string> overrides;
};

int ShrinkCommand(const ShrinkArgs& args, const std::string& self_exe);

}  // namespace shardbench::cli
