#include "cli/convert_command.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "engine/common/error.h"
#include "harness/peer_launch.h"
#include "harness/scenario/scenario.h"

extern char** environ;

namespace shardbench::cli {

int ConvertCheckpointCommand(const std::string& direction, const std::string& src, const std::string& out) {
  const std::string python = PeerPython(Scenario{});  // $SHARDBENCH_PYTHON, else the project's .venv
  if (!std::filesystem::exists(python)) {
    throw InfraError("convert-checkpoint: the peer's Python '" + python + "' does not exist (scripts/setup.sh makes it)");
  }
  ::setenv("PYTHONPATH", PeerPythonPath().c_str(), 1);
  std::vector<std::string> args = {python, "-m", "torch_fsdp.dcp_convert", direction, src, out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (const int err = ::posix_spawn(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ); err != 0) {
    throw InfraError("convert-checkpoint: could not start " + python + ": " + std::strerror(err));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 2)) return WEXITSTATUS(status);
  return static_cast<int>(ExitCode::kInfra);  // a traceback, a signal: infrastructure or our bug, said on stderr
}

}  // namespace shardbench::cli
