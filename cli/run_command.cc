#include "cli/run_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/comm/process_launcher.h"
#include "engine/comm/rendezvous.h"
#include "engine/common/error.h"
#include "reporters/provenance.h"
#include "reporters/run_result.h"
#include "scenarios/scenario_parser.h"
#include "suites/scenario_runner.h"

namespace shardbench::cli {
namespace {

std::string Timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "    " + all[i] + "\n";
  return out;
}

const nlohmann::json* FindMetric(const nlohmann::json& result, const std::string& name) {
  for (const auto& m : result["metrics"]) {
    if (m["name"] == name) return &m;
  }
  return nullptr;
}

void PrintSummary(const RunResult& r, const std::string& path) {
  const nlohmann::json j = ToJson(r);
  auto median = [&](const char* name) {
    const auto* m = FindMetric(j, name);
    return m && !(*m)["median"].is_null() ? (*m)["median"].get<double>() : 0.0;
  };
  std::printf("\n%s  [%s]\n", r.scenario["name"].get<std::string>().c_str(), r.status.c_str());
  std::printf("  loss            %.4f -> %.4f over %zu steps\n", r.loss.front(), r.loss.back(), r.loss.size());
  std::printf("  tokens/s        %.0f (global, median)  %.0f per rank\n", median("tokens_per_s"),
              median("tokens_per_s_per_rank"));
  std::printf("  step time       %.2f ms (p50)   optimizer share %.1f%%\n", median("step_time") * 1e3,
              100 * median("optimizer_share"));
  std::printf("  params          %.0f total, %.0f trainable\n", median("params_total"), median("params_trainable"));
  std::printf("  memory/rank     params %.1f MiB, grads %.1f MiB, optimizer %.1f MiB, peak RSS %.0f MiB\n",
              median("param_bytes") / 1048576, median("grad_bytes") / 1048576, median("optim_state_bytes") / 1048576,
              median("host_rss_peak") / 1048576);
  for (const auto& c : r.checks) std::printf("  check %-9s %s  %s\n", c.name.c_str(), c.passed ? "PASS" : "FAIL", c.detail.c_str());
  std::printf("  results         %s\n", path.c_str());
}

// This process is one rank (launched by us, torchrun or srun).
int RunAsRank(const Scenario& s, const comm::RankEnv& env, const std::string& out_dir, bool quiet) {
  RunnerOptions opts;
  opts.run_id = s.name + "-" + Timestamp();
  const bool tty = isatty(STDOUT_FILENO);
  if (!quiet) {
    opts.on_step = [tty](const StepProgress& p) {
      std::printf("%sstep %3lld/%lld%s loss %.4f  %8.0f tok/s  rss %5.0f MiB%s", tty ? "\r" : "",
                  static_cast<long long>(p.step), static_cast<long long>(p.total), p.warmup ? " (warmup)" : "         ",
                  p.loss, p.tokens_per_s, p.rss_bytes / 1048576.0, tty ? "" : "\n");
      std::fflush(stdout);
    };
  }
  std::optional<RunResult> result = RunScenarioRank(s, env, opts);
  if (!result) return 0;
  const std::string path = out_dir + "/" + s.name + ".json";
  WriteFileAtomically(path, ToJson(*result).dump(2) + "\n");
  if (!quiet) PrintSummary(*result, path);
  return result->status == "ok" ? 0 : 1;
}

}  // namespace

int RunCommand(const RunArgs& args, const std::string& self_exe) {
  std::vector<std::string> overrides = args.overrides;
  const comm::RankEnv env = comm::RankEnv::FromEnvironment();
  if (env.from_launcher) {
    // One rank of a job someone else launched: the launcher already resolved world size.
    Scenario s = LoadScenarioFile(args.target, overrides);
    return RunAsRank(s, env, args.out_dir.empty() ? "results/" + s.name : args.out_dir, args.quiet);
  }
  if (args.nproc < 0) throw InputError("--nproc must be at least 1, got " + std::to_string(args.nproc));
  if (args.nproc > 0) overrides.push_back("world_size=" + std::to_string(args.nproc));
  Scenario s = LoadScenarioFile(args.target, overrides);  // bad input fails here, before any launch
  const std::string out_dir = args.out_dir.empty() ? "results/" + s.name + "-" + Timestamp() : args.out_dir;
  std::filesystem::create_directories(out_dir);
  if (s.world_size == 1) return RunAsRank(s, env, out_dir, args.quiet);

  // Spawn world_size local ranks of ourselves. Rank 0 talks to the terminal; every rank also
  // keeps a log so a failure can be shown with its context.
  comm::LaunchSpec spec;
  spec.argv = {self_exe, "run", args.target, "--out", out_dir};
  if (args.quiet) spec.argv.push_back("--quiet");
  spec.argv.insert(spec.argv.end(), overrides.begin(), overrides.end());
  spec.nproc = s.world_size;
  spec.master_addr = env.master_addr;
  spec.timeout = std::chrono::milliseconds(static_cast<int64_t>(s.timeout_s * 1000) * 2 + 60000);
  spec.log_dir = out_dir + "/logs";
  spec.rank0_to_terminal = true;
  std::filesystem::create_directories(spec.log_dir);
  if (!args.quiet) std::printf("launching %d ranks (%s), logs in %s\n", s.world_size, s.backend.c_str(), spec.log_dir.c_str());
  std::fflush(stdout);
  const comm::LaunchResult launched = comm::LaunchLocalRanks(spec);
  if (launched.ok) return 0;
  std::fprintf(stderr, "shardbench run: %s\n", launched.message.c_str());
  int code = 3;
  if (launched.failed_rank >= 0) {
    const int rank = launched.failed_rank;
    const int child_code = launched.ranks[rank].exit_code;
    if (child_code == 1 || child_code == 2) code = child_code;  // a failed check or bad input, not infrastructure
    if (rank != 0) {
      const std::string log = spec.log_dir + "/rank" + std::to_string(rank) + ".log";
      std::fprintf(stderr, "last lines of %s:\n%s", log.c_str(), Tail(log, 15).c_str());
    }
  }
  return code;
}

}  // namespace shardbench::cli
