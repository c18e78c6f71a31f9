#include "tests/support/multi_rank.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "engine/common/error.h"

namespace shardbench::testing {

std::string InputErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

std::string MakeTempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path dir = std::filesystem::path(base ? base : std::filesystem::temp_directory_path().string()) /
                              ("shardbench_test_" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CliRun RunShardbench(const std::string& args) {
  const std::string cmd = std::string(SHARDBENCH_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string Describe(const MultiRankRun& run) {
  std::string s = run.result.message + "\n";
  for (size_t r = 0; r < run.logs.size(); ++r) s += "--- rank " + std::to_string(r) + "\n" + run.logs[r];
  return s;
}

MultiRankRun RunRankWorker(int nproc, const std::vector<std::string>& args, comm::LaunchSpec spec) {
  static int counter = 0;
  spec.nproc = nproc;
  spec.argv = {SHARDBENCH_RANK_WORKER};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.log_dir = MakeTempDir("run" + std::to_string(counter++));
  if (spec.timeout.count() == 0) spec.timeout = std::chrono::seconds(120);
  MultiRankRun run;
  const auto start = std::chrono::steady_clock::now();
  run.result = comm::LaunchLocalRanks(spec);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r = 0; r < nproc; ++r) run.logs.push_back(ReadFile(spec.log_dir + "/rank" + std::to_string(r) + ".log"));
  return run;
}

}  // namespace shardbench::testing
