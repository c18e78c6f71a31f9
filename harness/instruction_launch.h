// Ranks that count their instructions (scenario profile.instructions): each is started under
// valgrind's callgrind with instrumentation off until its measured window opens
// (engine/profile/instruction_count.h switches it on), one intra-op thread (OpenMP's spinning
// workers would add instructions that depend on scheduling), and its dumps in the repetition's
// logs/ (callgrind.<pid>.1: the measured steps, function by function, for callgrind_annotate).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace shardbench {

inline constexpr char kCallgrindOutVariable[] = "SHARDBENCH_CALLGRIND_OUT";

struct CountedLaunch {
  std::vector<std::string> argv_prefix;    // valgrind and its options, before the rank's argv
  std::map<std::string, std::string> env;  // for every rank
};

// InfraError (exit 3) when valgrind is not on PATH (scripts/setup.sh installs it).
CountedLaunch CallgrindLaunch(const std::string& log_dir);

// This process's dump prefix: SHARDBENCH_CALLGRIND_OUT with %p replaced by its pid ("" unset).
std::string CallgrindDumpPrefix();

}  // namespace shardbench
