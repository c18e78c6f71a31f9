#include "cli/merge_command.h"

#include <cstdio>
#include <filesystem>

#include "engine/common/error.h"
#include "reporters/pooled_runs.h"

namespace shardbench::cli {

int MergeCommand(const MergeArgs& args) {
  if (args.runs.size() < 2) throw InputError("merge: give at least two runs to pool");
  if (args.out_dir.empty()) throw InputError("merge --out: empty; name a new directory");
  // Nothing already written is overwritten: a directory that holds results is refused.
  if (std::filesystem::exists(args.out_dir + "/index.json")) {
    throw InputError("merge --out " + args.out_dir + ": already holds results (index.json); choose a new directory");
  }
  std::vector<ResultSet> runs;
  for (const auto& r : args.runs) runs.push_back(LoadResultSet(r));  // bad input fails before anything is written
  const ResultSet pooled = PoolResultSets(runs);
  try {
    WriteResultSet(pooled, args.out_dir, "merge of " + std::to_string(runs.size()) + " runs");
  } catch (const std::exception& e) {
    throw InfraError(std::string("merge: writing ") + args.out_dir + ": " + e.what());
  }
  std::printf("merged %zu runs (%zu instances) into %s\n", runs.size(), pooled.instances.size(), args.out_dir.c_str());
  return 0;
}

}  // namespace shardbench::cli
