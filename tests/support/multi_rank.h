// Helpers for tests that run a rank program in several processes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/comm/process_launcher.h"

namespace shardbench::testing {

// A fresh directory under the test temp dir.
std::string MakeTempDir(const std::string& name);
std::string ReadFile(const std::string& path);
// The message of the InputError `fn` throws ("<no InputError>" when it throws none).
std::string InputErrorOf(const std::function<void()>& fn);

// Launches `nproc` copies of the rank worker with `args`, logs per rank in a temp dir.
struct MultiRankRun {
  comm::LaunchResult result;
  std::vector<std::string> logs;  // rank r's stdout+stderr
  double seconds = 0;
};
// The launcher's verdict and every rank's log, for a failure message.
std::string Describe(const MultiRankRun& run);

// `shardbench ARGS` (the built CLI) through the shell: its exit code and stdout + stderr.
struct CliRun {
  int exit_code;
  std::string output;
};
CliRun RunShardbench(const std::string& args);

MultiRankRun RunRankWorker(int nproc, const std::vector<std::string>& args, comm::LaunchSpec spec = {});

}  // namespace shardbench::testing
