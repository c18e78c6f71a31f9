// `shardbench merge RUN... --out DIR`: several runs of the same target pooled into one run
// directory (reporters/pooled_runs.h) that compare and history read like any other.
#pragma once

#include <string>
#include <vector>

namespace shardbench::cli {

struct MergeArgs {
  std::vector<std::string> runs;  // results files, index.json files or run directories
  std::string out_dir;            // must not hold results already
};

int MergeCommand(const MergeArgs& args);

}  // namespace shardbench::cli
