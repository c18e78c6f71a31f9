#include "harness/instruction_launch.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "engine/common/error.h"

namespace shardbench {
namespace {

std::string FindOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

}  // namespace

CountedLaunch CallgrindLaunch(const std::string& log_dir) {
  const std::string valgrind = FindOnPath("valgrind");
  if (valgrind.empty()) {
    throw InfraError(
        "profile.instructions: valgrind is not on PATH (scripts/setup.sh installs it: apt package valgrind)");
  }
  const std::string out = log_dir + "/callgrind.%p";
  CountedLaunch launch;
  // --instr-atstart=no: nothing is counted, and start-up and warmup run several times faster,
  // until the window switches instrumentation on for the whole process.
  launch.argv_prefix = {valgrind, "--tool=callgrind", "--quiet", "--instr-atstart=no", "--callgrind-out-file=" + out};
  launch.env = {{kCallgrindOutVariable, out}, {"OMP_NUM_THREADS", "1"}, {"MKL_NUM_THREADS", "1"}};
  return launch;
}

std::string CallgrindDumpPrefix() {
  const char* out = std::getenv(kCallgrindOutVariable);
  if (!out) return "";
  std::string prefix = out;
  if (const size_t at = prefix.find("%p"); at != std::string::npos) prefix.replace(at, 2, std::to_string(::getpid()));
  return prefix;
}

}  // namespace shardbench
