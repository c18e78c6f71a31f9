#include "engine/comm/process_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
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
volatile sig_atomic_t g_interrupt_received = 0;  // sticky: the run stops after this launch
void RememberSignal(int sig) { g_forward_signal = g_interrupt_received = sig; }

std::vector<std::string> BuildEnvironment(const LaunchSpec& spec, int rank, int port) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env["RANK"] = std::to_string(spec.node_rank * spec.nproc + rank);
  env["LOCAL_RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = std::to_string(spec.nnodes * spec.nproc);
  env["LOCAL_WORLD_SIZE"] = std::to_string(spec.nproc);
  env["GROUP_RANK"] = std::to_string(spec.node_rank);
  env["GROUP_WORLD_SIZE"] = std::to_string(spec.nnodes);
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

// Test hook: SHARDBENCH_FAIL_SPAWN_OF_RANK=R makes the fork of rank R fail (EAGAIN), as a full
// process table would; forks cannot be made to fail for root, whom CI runs as.
bool SpawnFailureInjected(int rank) {
  const char* at = std::getenv("SHARDBENCH_FAIL_SPAWN_OF_RANK");
  return at && std::string(at) == std::to_string(rank);
}

pid_t Spawn(int rank, const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log_path) {
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const pid_t launcher = getpid();
  pid_t pid = SpawnFailureInjected(rank) ? (errno = EAGAIN, -1) : fork();
  if (pid < 0) throw InfraError(std::string("launcher: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // own process group: stopping a rank stops what it started too
    // A rank dies with its launcher (kill -9 included: no handler of ours runs then), as
    // TorchElastic's workers die with their agent. If the launcher is already gone, so are we.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(137);
    if (!log_path.empty()) {
      int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);  // never through a planted link
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

namespace {

// The ranks of one launch while they run: which still run, how each ended, and stopping them
// all (SIGTERM, then SIGKILL after the grace period) once one fails, the job times out or the
// launcher itself is signalled.
class RunningRanks {
 public:
  RunningRanks(const LaunchSpec& spec, int port)
      : spec_(spec), pids_(spec.nproc, -1), running_(spec.nproc, false), start_(Clock::now()) {
    result_.ranks.resize(spec.nproc);
    for (int r = 0; r < spec.nproc; ++r) {
      const int global = spec.node_rank * spec.nproc + r;
      result_.ranks[r].rank = global;
      const bool to_file = !spec.log_dir.empty() && !(global == 0 && spec.rank0_to_terminal);
      const std::string log = to_file ? spec.log_dir + "/rank" + std::to_string(global) + ".log" : "";
      try {
        pids_[r] = Spawn(global, spec.argv, BuildEnvironment(spec, r, port), log);
      } catch (...) {  // a failed fork: the ranks already started would wait for it forever
        for (int started = 0; started < r; ++started) {
          kill(-pids_[started], SIGKILL);
          waitpid(pids_[started], nullptr, 0);
        }
        throw;
      }
      running_[r] = true;
    }
  }

  bool any_running() const {
    for (bool b : running_) if (b) return true;
    return false;
  }

  // A child ended, stopped or continued: the first rank to fail on its own (not stopped by us)
  // stops the others. A rank that fails while another is stopped (a SIGSTOPped rank cannot
  // answer, so its peers time out) is the stopped rank's consequence: that one is named.
  void reap(pid_t pid, int status) {
    for (int r = 0; r < spec_.nproc; ++r) {
      if (pids_[r] != pid || !running_[r]) continue;
      RankExit& ex = result_.ranks[r];
      if (WIFSTOPPED(status) || WIFCONTINUED(status)) {
        ex.stop_signal = WIFSTOPPED(status) ? WSTOPSIG(status) : 0;
        continue;
      }
      running_[r] = false;
      if (WIFEXITED(status)) ex.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) ex.signal = WTERMSIG(status);
      const bool failed = ex.signal != 0 || ex.exit_code != 0;
      if (failed && !ex.stopped_by_launcher && result_.failed_rank < 0 && !result_.timed_out) {
        result_.failed_rank = r;
        result_.message = Describe(ex);
        for (int other = 0; other < spec_.nproc; ++other) {
          const RankExit& o = result_.ranks[other];
          if (other == r || !running_[other] || o.stop_signal == 0) continue;
          result_.failed_rank = other;
          result_.message = "rank " + std::to_string(o.rank) + " was stopped by signal " + std::to_string(o.stop_signal) +
                            " (" + strsignal(o.stop_signal) + ") and answered no collective; " + result_.message;
          break;
        }
        stop_all();
      }
    }
  }

  // Between reaps: a forwarded signal, the job timeout, and the end of the grace period.
  void watch() {
    if (g_forward_signal && !stopping_) {
      result_.message = std::string("launcher received ") + strsignal(g_forward_signal) + "; stopped all ranks";
      stop_all();
    }
    if (!stopping_ && spec_.timeout.count() > 0 && Clock::now() - start_ > spec_.timeout) {
      result_.timed_out = true;
      std::ostringstream names;
      int n = 0;
      for (int r = 0; r < spec_.nproc; ++r) if (running_[r]) names << (n++ ? ", " : "") << result_.ranks[r].rank;
      result_.message = std::string(n > 1 ? "ranks " : "rank ") + names.str() + " still running after " +
                        std::to_string(spec_.timeout.count() / 1000.0).substr(0, 6) + " s (job timeout); stopped";
      stop_all();
    }
    if (stopping_ && Clock::now() > kill_at_) {
      for (int r = 0; r < spec_.nproc; ++r) if (running_[r]) kill(-pids_[r], SIGKILL);
    }
  }

  LaunchResult finish() {
    result_.ok = !stopping_ && result_.failed_rank < 0 && !result_.timed_out;
    return result_;
  }

 private:
  void stop_all() {
    if (stopping_) return;
    stopping_ = true;
    for (int r = 0; r < spec_.nproc; ++r) {
      if (running_[r]) {
        result_.ranks[r].stopped_by_launcher = true;
        kill(-pids_[r], SIGTERM);
      }
    }
    kill_at_ = Clock::now() + spec_.grace;
  }

  const LaunchSpec& spec_;
  std::vector<pid_t> pids_;
  std::vector<bool> running_;
  const Clock::time_point start_;
  LaunchResult result_;
  bool stopping_ = false;
  Clock::time_point kill_at_{};
};

}  // namespace

void CheckLocalRanks(int64_t ranks, const std::string& what) {
  int64_t limit = std::max<int64_t>(8, 4 * static_cast<int64_t>(std::thread::hardware_concurrency()));
  std::string why = "4 per core here";
  if (const char* v = std::getenv("SHARDBENCH_MAX_LOCAL_RANKS"); v && *v) {
    try {
      limit = std::stoll(v);
    } catch (const std::exception&) {
      throw InputError("SHARDBENCH_MAX_LOCAL_RANKS='" + std::string(v) + "': expected a number of ranks");
    }
    why = "SHARDBENCH_MAX_LOCAL_RANKS";
  }
  if (ranks > limit) {
    throw InputError(what + " asks for " + std::to_string(ranks) + " ranks on this machine; at most " +
                     std::to_string(limit) + " (" + why + "; raise it with SHARDBENCH_MAX_LOCAL_RANKS, or spread "
                     "the job over machines with --nnodes, torchrun or srun)");
  }
}

int InterruptReceived() { return g_interrupt_received; }

LaunchResult LaunchLocalRanks(const LaunchSpec& spec) {
  if (spec.nproc < 1) throw InputError("--nproc must be at least 1, got " + std::to_string(spec.nproc));
  if (spec.argv.empty()) throw std::invalid_argument("launcher: empty argv");
  if (g_interrupt_received) {  // a later launch of an interrupted process (shrink, matrix) starts nothing
    LaunchResult refused;
    refused.message = std::string("not started: the run was interrupted (") + strsignal(g_interrupt_received) + ")";
    return refused;
  }
  const int port = spec.master_port ? spec.master_port : PickFreePort(spec.master_addr);

  // SIGINT/SIGTERM while the ranks run are forwarded to them (RunningRanks::watch), then restored.
  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = RememberSignal;
  sigemptyset(&sa.sa_mask);
  g_forward_signal = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  RunningRanks ranks(spec, port);
  while (ranks.any_running()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED);
    if (pid > 0) {
      ranks.reap(pid, status);
      continue;
    }
    ranks.watch();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return ranks.finish();
}

}  // namespace shardbench::comm
