#include "harness/repetition_launch.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include "engine/comm/process_launcher.h"
#include "engine/common/error.h"
#include "harness/instruction_launch.h"
#include "harness/peer_launch.h"
#include "reporters/run_result.h"
#include "harness/scenario/peer_scenario.h"
#include "harness/scenario/scenario_parser.h"
#include "harness/scenario/engine_registry.h"

namespace shardbench {
namespace fs = std::filesystem;
namespace {

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "    " + all[i] + "\n";
  return out;
}

// World size 1 (not a peer): this process is the only rank.
LaunchOutcome RunInProcess(const Scenario& s, const std::string& rep_dir,
                           const std::function<void(const StepProgress&)>& on_step) {
  const LaunchOutcome o = OutcomeOf([&] { return LaunchOutcome{RunAsRank(s, comm::RankEnv{}, rep_dir, on_step), ""}; });
  if (o.exit_code > 1) std::fprintf(stderr, "shardbench: %s\n", o.message.c_str());
  return o;
}

// A peer repetition whose ranks finished (0) or failed a check (1): its result, converted.
std::optional<LaunchOutcome> FinishPeer(const Scenario& s, const std::string& rep_dir, int code) {
  if (code != 0 && code != 1) return std::nullopt;
  bool written = false;
  const LaunchOutcome o = OutcomeOf([&] {
    const int finished = FinishPeerRepetition(s, rep_dir, code);
    written = finished == 0 || fs::is_regular_file(rep_dir + "/result.json");
    return LaunchOutcome{finished, ""};
  });
  if (o.exit_code > 1 || written) return o;
  return std::nullopt;
}

// Why the launch failed: the launcher's message, rank 0's error.txt, the failing rank's log.
LaunchOutcome Failure(const comm::LaunchResult& launched, const comm::LaunchSpec& spec, const std::string& rep_dir) {
  LaunchOutcome o{3, launched.message};
  if (fs::is_regular_file(rep_dir + "/error.txt")) {
    std::ifstream in(rep_dir + "/error.txt");
    std::string reason((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!reason.empty() && reason.back() == '\n') reason.pop_back();
    o.message += ": " + reason;
  }
  if (launched.failed_rank >= 0) {
    const int code = launched.ranks[launched.failed_rank].exit_code;
    if (code == 1 || code == 2) o.exit_code = code;  // a failed check or bad input, not infrastructure
    if (launched.failed_rank != 0) {
      const std::string log = spec.log_dir + "/rank" + std::to_string(launched.failed_rank) + ".log";
      o.message += "; last lines of " + log + ":\n" + Tail(log, 15);
    }
  }
  return o;
}

}  // namespace

std::string Timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

int RunAsRank(const Scenario& s, const comm::RankEnv& env, const std::string& out_dir,
              const std::function<void(const StepProgress&)>& on_step, c10::intrusive_ptr<c10d::Store> store) {
  RunnerOptions opts;
  opts.store = std::move(store);
  opts.checkpoint_dir = out_dir + "/checkpoint";
  opts.trace_file = out_dir + "/trace.json";
  opts.run_id = s.name + "-" + Timestamp() + "-" + std::to_string(getpid());
  opts.on_step = on_step;
  std::optional<RunResult> result = RunScenarioRank(s, env, opts);
  if (!result) return 0;
  WriteFileAtomically(out_dir + "/result.json", ToJson(*result).dump(2) + "\n");
  return result->status == "ok" ? 0 : 1;
}

LaunchOutcome LaunchRepetition(const Scenario& s, const std::string& rep_dir, const std::string& self_exe, bool quiet,
                               const std::function<void(const StepProgress&)>& on_step) {
  fs::create_directories(rep_dir);
  const std::string resolved = rep_dir + "/scenario.yaml";
  WriteFileAtomically(resolved, YAML::Dump(ScenarioToYaml(s)) + "\n");
  const bool peer = IsPeerEngine(s.engine);
  // A counted rank runs under valgrind: a process of its own even at world size 1.
  if (s.world_size == 1 && !peer && !s.profile.instructions) return RunInProcess(s, rep_dir, on_step);
  comm::LaunchSpec spec;
  if (peer) {  // the same ranks, backend and timeouts, on PyTorch's FSDP (peers/torch_fsdp)
    const LaunchOutcome prepared = OutcomeOf([&] {
      spec.argv = PreparePeerRepetition(s, resolved, rep_dir);
      spec.env["PYTHONPATH"] = PeerPythonPath();  // `python -m torch_fsdp.peer` finds its package
      return LaunchOutcome{};
    });
    if (prepared.exit_code != 0) return prepared;
  } else {
    spec.argv = {self_exe, "rank", resolved, "--out", rep_dir};
    if (quiet) spec.argv.push_back("--quiet");
  }
  if (s.profile.instructions) {
    const LaunchOutcome counted = OutcomeOf([&] {
      const CountedLaunch c = CallgrindLaunch(rep_dir + "/logs");
      spec.argv.insert(spec.argv.begin(), c.argv_prefix.begin(), c.argv_prefix.end());
      for (const auto& [k, v] : c.env) spec.env[k] = v;
      return LaunchOutcome{};
    });
    if (counted.exit_code != 0) return counted;
  }
  spec.nproc = s.world_size;
  spec.master_addr = comm::RankEnv::FromEnvironment().master_addr;
  spec.timeout = std::chrono::milliseconds(static_cast<int64_t>(s.timeout_s * 1000) * 2 + 60000);
  spec.log_dir = rep_dir + "/logs";
  spec.rank0_to_terminal = true;
  fs::create_directories(spec.log_dir);
  std::fflush(stdout);
  const comm::LaunchResult launched = comm::LaunchLocalRanks(spec);
  if (peer) {
    const int code = launched.ok ? 0 : launched.failed_rank >= 0 ? launched.ranks[launched.failed_rank].exit_code : 3;
    if (std::optional<LaunchOutcome> finished = FinishPeer(s, rep_dir, code)) return *finished;
  }
  if (launched.ok) return {0, ""};
  return Failure(launched, spec, rep_dir);
}

}  // namespace shardbench
