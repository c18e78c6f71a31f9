#include "engine/comm/process_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "engine/common/error.h"

extern char** environ;

namespace shardbench::comm {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_forward_signal = 0;
void RememberSignal(int sig) { g_forward_signal = sig; }

std::vector<std::string> BuildEnvironment(const LaunchSpec& spec, int rank, int port) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env["RANK"] = std::to_string(rank);
  env["LOCAL_RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = std::to_string(spec.nproc);
  env["LOCAL_WORLD_SIZE"] = std::to_string(spec.nproc);
  env["GROUP_RANK"] = "0";
  env["MASTER_ADDR"] = spec.master_addr;
  env["MASTER_PORT"] = std::to_string(port);
  // Like torchrun: N ranks on one host must not each start a thread per core.
  if (!env.count("OMP_NUM_THREADS")) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    env["OMP_NUM_THREADS"] = std::to_string(std::max(1u, cores / static_cast<unsigned>(spec.nproc)));
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  auto it = spec.rank_env.find(rank);
  if (it != spec.rank_env.end()) {
    for (const auto& [k, v] : it->second) env[k] = v;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log_path) {
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw InfraError(std::string("launcher: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // own process group: stopping a rank stops what it started too
    if (!log_path.empty()) {
      int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
    }
    execve(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "launcher: cannot execute %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

std::string Describe(const RankExit& r) {
  std::ostringstream s;
  s << "rank " << r.rank;
  if (r.signal) {
    s << " was killed by signal " << r.signal << " (" << strsignal(r.signal) << ")";
  } else {
    s << " exited with code " << r.exit_code;
  }
  return s.str();
}

}  // namespace

int PickFreePort(const std::string& addr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw InfraError("launcher: cannot create a socket to pick a port");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (inet_pton(AF_INET, addr == "localhost" ? "127.0.0.1" : addr.c_str(), &sa.sin_addr) != 1) {
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    throw InfraError("launcher: cannot bind a free port on " + addr + ": " + std::strerror(errno));
  }
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  int port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

LaunchResult LaunchLocalRanks(const LaunchSpec& spec) {
  if (spec.nproc < 1) throw InputError("--nproc must be at least 1, got " + std::to_string(spec.nproc));
  if (spec.argv.empty()) throw std::invalid_argument("launcher: empty argv");
  const int port = spec.master_port ? spec.master_port : PickFreePort(spec.master_addr);

  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = RememberSignal;
  sigemptyset(&sa.sa_mask);
  g_forward_signal = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  LaunchResult result;
  std::vector<pid_t> pids(spec.nproc, -1);
  std::vector<bool> running(spec.nproc, false);
  result.ranks.resize(spec.nproc);
  for (int r = 0; r < spec.nproc; ++r) {
    result.ranks[r].rank = r;
    const bool to_file = !spec.log_dir.empty() && !(r == 0 && spec.rank0_to_terminal);
    const std::string log = to_file ? spec.log_dir + "/rank" + std::to_string(r) + ".log" : "";
    pids[r] = Spawn(spec.argv, BuildEnvironment(spec, r, port), log);
    running[r] = true;
  }

  const auto start = Clock::now();
  auto any_running = [&] {
    for (bool b : running) if (b) return true;
    return false;
  };
  bool stopping = false;
  Clock::time_point kill_at{};
  auto stop_all = [&] {
    if (stopping) return;
    stopping = true;
    for (int r = 0; r < spec.nproc; ++r) {
      if (running[r]) {
        result.ranks[r].stopped_by_launcher = true;
        kill(-pids[r], SIGTERM);
      }
    }
    kill_at = Clock::now() + spec.grace;
  };

  while (any_running()) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < spec.nproc; ++r) {
        if (pids[r] != pid || !running[r]) continue;
        running[r] = false;
        RankExit& ex = result.ranks[r];
        if (WIFEXITED(status)) ex.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) ex.signal = WTERMSIG(status);
        const bool failed = ex.signal != 0 || ex.exit_code != 0;
        if (failed && !ex.stopped_by_launcher && result.failed_rank < 0 && !result.timed_out) {
          result.failed_rank = r;
          result.message = Describe(ex);
          stop_all();
        }
      }
      continue;
    }
    if (g_forward_signal && !stopping) {
      result.message = std::string("launcher received ") + strsignal(g_forward_signal) + "; stopped all ranks";
      stop_all();
    }
    if (!stopping && spec.timeout.count() > 0 && Clock::now() - start > spec.timeout) {
      result.timed_out = true;
      std::ostringstream names;
      int n = 0;
      for (int r = 0; r < spec.nproc; ++r) if (running[r]) names << (n++ ? ", " : "") << r;
      result.message = std::string(n > 1 ? "ranks " : "rank ") + names.str() + " still running after " +
                       std::to_string(spec.timeout.count() / 1000.0).substr(0, 6) + " s (job timeout); stopped";
      stop_all();
    }
    if (stopping && Clock::now() > kill_at) {
      for (int r = 0; r < spec.nproc; ++r) if (running[r]) kill(-pids[r], SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  result.ok = !stopping && result.failed_rank < 0 && !result.timed_out;
  return result;
}

}  // namespace shardbench::comm
