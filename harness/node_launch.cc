#include "harness/node_launch.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "engine/comm/process_launcher.h"
#include "engine/common/error.h"
#include "harness/suite.h"

namespace shardbench {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The flag, else its env form(s), else `fallback`; a malformed env value names the variable.
int IntSetting(int flag, int unset, std::initializer_list<const char*> names, int fallback) {
  if (flag != unset) return flag;
  for (const char* name : names) {
    const std::string v = Env(name);
    if (v.empty()) continue;
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(v.c_str(), &end, 10);
    // Within int: 4294967297 was read as 1 (a cast that wrapped).
    if (*end != '\0' || n < 0 || errno == ERANGE || n > INT_MAX) {
      throw InputError(std::string(name) + "=" + v + ": expected a non-negative integer up to " + std::to_string(INT_MAX));
    }
    return static_cast<int>(n);
  }
  return fallback;
}

std::string StringSetting(const std::string& flag, std::initializer_list<const char*> names) {
  if (!flag.empty()) return flag;
  for (const char* name : names) {
    if (std::string v = Env(name); !v.empty()) return v;
  }
  return "";
}

// What each rank runs: the same `run`, without the launcher's own options.
std::vector<std::string> RankArgv(const RunRequest& r, const std::string& self_exe) {
  std::vector<std::string> argv = {self_exe, "run", r.target};
  if (!r.out_dir.empty()) argv.push_back("--out=" + r.out_dir);  // one word: an --out of "-x" is not an option
  if (r.quiet) argv.push_back("--quiet");
  if (r.auto_max) argv.insert(argv.end(), {"--repetitions", "auto:" + std::to_string(*r.auto_max)});
  if (r.repetitions > 0) argv.insert(argv.end(), {"--repetitions", std::to_string(r.repetitions)});
  if (r.target_mde) argv.insert(argv.end(), {"--target-mde", std::to_string(*r.target_mde)});
  if (!r.policy.empty()) argv.insert(argv.end(), {"--policy", r.policy});
  argv.insert(argv.end(), r.overrides.begin(), r.overrides.end());
  return argv;
}

}  // namespace

bool WantsNodeLaunch(const RunRequest& request) { return request.nnodes > 0 || !Env("PET_NNODES").empty(); }

int LaunchNodeRanks(const RunRequest& request, const std::string& self_exe) {
  comm::LaunchSpec spec;
  spec.nnodes = IntSetting(request.nnodes, 0, {"PET_NNODES"}, 1);
  spec.node_rank = IntSetting(request.node_rank, -1, {"PET_NODE_RANK", "NODE_RANK"}, -1);
  spec.nproc = IntSetting(request.nproc, 0, {"PET_NPROC_PER_NODE"}, 0);
  spec.master_addr = StringSetting(request.master_addr, {"PET_MASTER_ADDR", "MASTER_ADDR"});
  spec.master_port = IntSetting(request.master_port, 0, {"PET_MASTER_PORT", "MASTER_PORT"}, 0);
  if (spec.nnodes < 1) throw InputError("--nnodes must be at least 1");
  if (spec.node_rank < 0 || spec.node_rank >= spec.nnodes) {
    throw InputError("--node-rank (or PET_NODE_RANK) must be in 0.." + std::to_string(spec.nnodes - 1) + " with --nnodes " +
                     std::to_string(spec.nnodes));
  }
  if (spec.nproc < 1) throw InputError("--nnodes needs --nproc-per-node M (ranks on each node)");
  comm::CheckLocalRanks(spec.nproc, "--nproc-per-node");
  if (spec.nnodes > 1 && (spec.master_addr.empty() || spec.master_port == 0)) {
    throw InputError("--nnodes " + std::to_string(spec.nnodes) +
                     " needs --master-addr (node 0's address, reachable from every node) and --master-port");
  }
  if (spec.master_addr.empty()) spec.master_addr = "127.0.0.1";
  if (spec.master_port > 65535) throw InputError("--master-port must be in 1..65535");
  // Bad input fails here, on every node, before any rank starts.
  std::vector<std::string> overrides = request.overrides;
  overrides.push_back("world_size=" + std::to_string(spec.nnodes * spec.nproc));
  std::string title;
  ResolveTarget(request.target, overrides, &title);
  spec.argv = RankArgv(request, self_exe);
  std::fflush(stdout);
  const comm::LaunchResult launched = comm::LaunchLocalRanks(spec);
  if (launched.ok) return 0;
  std::fprintf(stderr, "shardbench run: node %d: %s\n", spec.node_rank, launched.message.c_str());
  if (launched.failed_rank >= 0) {
    const int code = launched.ranks[launched.failed_rank].exit_code;
    if (code >= 1 && code <= 3) return code;
  }
  return static_cast<int>(ExitCode::kInfra);
}

}  // namespace shardbench
