#include "cli/run_command.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "cli/summary.h"
#include "engine/comm/process_launcher.h"
#include "engine/comm/rendezvous.h"
#include "engine/common/error.h"
#include "reporters/adaptive_repetitions.h"
#include "reporters/dashboard.h"
#include "reporters/gate_policy.h"
#include "reporters/provenance.h"
#include "reporters/repetitions.h"
#include "reporters/result_set.h"
#include "reporters/run_result.h"
#include "scenarios/scenario_parser.h"
#include "scenarios/peer_scenario.h"
#include "harness/peer_launch.h"
#include "harness/scenario_runner.h"
#include "harness/suite.h"

namespace shardbench::cli {
namespace fs = std::filesystem;
namespace {

std::string Timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// "lora_blowup[use_orig_params=true,wrap_policy=lora_separate]" -> a file name.
std::string SafeName(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '=' || c == '_') ? c : '_';
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
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

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// This process is one rank of one repetition (launched by us, torchrun or srun).
int RunAsRank(const Scenario& s, const comm::RankEnv& env, const std::string& out_dir, bool quiet) {
  RunnerOptions opts;
  opts.checkpoint_dir = out_dir + "/checkpoint";
  opts.run_id = s.name + "-" + Timestamp() + "-" + std::to_string(getpid());
  if (!quiet) opts.on_step = ProgressPrinter(isatty(STDOUT_FILENO));
  std::optional<RunResult> result = RunScenarioRank(s, env, opts);
  if (!result) return 0;
  WriteFileAtomically(out_dir + "/result.json", ToJson(*result).dump(2) + "\n");
  return result->status == "ok" ? 0 : 1;
}

struct Outcome {
  int exit_code = 0;  // of the repetition: 0 ok, 1 a check failed, 2 input, 3 infra
  std::string message;
};

// One repetition of one instance: its ranks, launched here (world size 1 runs in-process).
Outcome LaunchRepetition(const Scenario& s, const std::string& rep_dir, const std::string& self_exe, bool quiet) {
  fs::create_directories(rep_dir);
  // The child ranks run exactly this resolved scenario (kept beside the results).
  const std::string resolved = rep_dir + "/scenario.yaml";
  WriteFileAtomically(resolved, YAML::Dump(ScenarioToYaml(s)) + "\n");
  const bool peer = IsPeerEngine(s.engine);
  if (s.world_size == 1 && !peer) {
    comm::RankEnv single;
    try {
      return {RunAsRank(s, single, rep_dir, quiet), ""};
    } catch (const Error& e) {
      std::fprintf(stderr, "shardbench: %s\n", e.what());
      return {static_cast<int>(e.code()), e.what()};
    }
  }
  comm::LaunchSpec spec;
  if (peer) {  // the same ranks, backend and timeouts, on PyTorch's FSDP (peers/torch_fsdp)
    try {
      spec.argv = PreparePeerRepetition(s, resolved, rep_dir);
    } catch (const Error& e) {
      return {static_cast<int>(e.code()), e.what()};
    }
  } else {
    spec.argv = {self_exe, "run", resolved, "--out", rep_dir};
    if (quiet) spec.argv.push_back("--quiet");
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
    if (code == 0 || code == 1) {
      try {
        const int finished = FinishPeerRepetition(s, rep_dir, code);
        if (finished == 0 || fs::is_regular_file(rep_dir + "/result.json")) return {finished, ""};
      } catch (const Error& e) {
        return {static_cast<int>(e.code()), e.what()};
      } catch (const std::exception& e) {  // e.g. a result.json that is not JSON
        return {static_cast<int>(ExitCode::kInfra), "peer result " + rep_dir + "/result.json unreadable: " + e.what()};
      }
    }
  }
  if (launched.ok) return {0, ""};
  Outcome o{3, launched.message};
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

int RunCommand(const RunArgs& args, const std::string& self_exe) {
  const comm::RankEnv env = comm::RankEnv::FromEnvironment();
  if (env.from_launcher) {
    // One rank of a job: the target is one resolved scenario (no matrix).
    const Scenario s = LoadScenarioFile(args.target, args.overrides);
    const std::string out = args.out_dir.empty() ? "results/" + SafeName(s.name) : args.out_dir;
    try {
      return RunAsRank(s, env, out, args.quiet);
    } catch (const std::exception& e) {
      // Leave the reason where the launching process (and the index) can find it.
      if (env.rank == 0) WriteFileAtomically(out + "/error.txt", std::string(e.what()) + "\n");
      throw;
    }
  }
  std::vector<std::string> overrides = args.overrides;
  if (args.nproc < 0) throw InputError("--nproc must be at least 1, got " + std::to_string(args.nproc));
  if (args.nproc > 0) overrides.push_back("world_size=" + std::to_string(args.nproc));
  std::string title;
  if (args.repetitions < 0) throw InputError("--repetitions must be at least 1, got " + std::to_string(args.repetitions));
  std::vector<Job> jobs = ResolveTarget(args.target, overrides, &title);  // bad input fails before any launch
  if (args.repetitions > 0) {
    for (Job& job : jobs) job.repetitions = args.repetitions;
  }
  if (args.target_mde && !args.auto_max) throw InputError("--target-mde needs --repetitions auto[:MAX]");
  std::optional<AdaptiveRepetitions> adaptive;
  if (args.auto_max) {
    if (!args.target_mde) throw InputError("--repetitions auto needs --target-mde X (0.10 = catch a 10% change)");
    adaptive = AdaptiveRepetitions{CheckRelativeChange(*args.target_mde, "--target-mde"), *args.auto_max,
                                   args.policy.empty() ? DefaultGatePolicy() : LoadGatePolicy(args.policy)};
  }
  const std::string out_dir = args.out_dir.empty() ? "results/" + SafeName(title) + "-" + Timestamp() : args.out_dir;
  fs::create_directories(out_dir);

  nlohmann::json index = {{"schema_version", kResultsSchemaVersion}, {"target", title}, {"started_at", NowIso8601Utc()},
                          {"instances", nlohmann::json::array()}};
  int worst = 0;
  bool all_as_expected = true;
  for (const Job& job : jobs) {
    const std::string safe = SafeName(job.scenario.name);
    if (!args.quiet && adaptive) {
      std::printf("== %s (%d rank%s, launches until it could catch %.1f%%, at most %d)\n", job.scenario.name.c_str(),
                  job.scenario.world_size, job.scenario.world_size > 1 ? "s" : "", 100 * adaptive->target_mde, adaptive->max);
    } else if (!args.quiet) {
      std::printf("== %s (%d rank%s, %d repetition%s)\n", job.scenario.name.c_str(), job.scenario.world_size,
                  job.scenario.world_size > 1 ? "s" : "", job.repetitions, job.repetitions > 1 ? "s" : "");
    }
    std::vector<nlohmann::json> reps;
    Outcome last;
    std::optional<PinStatus> pin;
    for (int r = 0; r < (adaptive ? adaptive->max : job.repetitions); ++r) {
      last = LaunchRepetition(job.scenario, out_dir + "/" + safe + "/rep" + std::to_string(r), self_exe, args.quiet);
      const std::string result = out_dir + "/" + safe + "/rep" + std::to_string(r) + "/result.json";
      if (last.exit_code > 1 || !fs::is_regular_file(result)) break;
      reps.push_back(ReadJson(result));
      if (adaptive) {
        // The comparison's family: this instance's gated sampled metrics, once per instance.
        adaptive->family_size = std::max<size_t>(1, GatedSampledMetrics(reps.front(), adaptive->policy) * jobs.size());
        pin = PinnedSoFar(reps, *adaptive);
        if (pin->pinned) break;
      }
    }
    nlohmann::json entry = {{"name", job.scenario.name}, {"file", nullptr}, {"expect", job.expect}, {"why", job.why},
                            {"repetitions", reps.size()}};
    if (adaptive && pin) {
      nlohmann::json mde = nlohmann::json::object();
      for (const auto& [metric, v] : pin->mde) mde[metric] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
      entry["adaptive"] = {{"target_mde", adaptive->target_mde}, {"max", adaptive->max},
                           {"stopped", pin->pinned ? "pinned" : "max"}, {"mde", mde}};
      std::printf("== %s: %zu launch%s, %s: %s\n", job.scenario.name.c_str(), reps.size(), reps.size() == 1 ? "" : "es",
                  pin->pinned ? "pinned" : "reached MAX", pin->Describe(adaptive->target_mde).c_str());
    }
    std::string status = "error";
    if (!reps.empty() && last.exit_code <= 1) {
      nlohmann::json merged = MergeRepetitions(reps);
      const std::string file = safe + ".json";
      WriteFileAtomically(out_dir + "/" + file, merged.dump(2) + "\n");
      entry["file"] = file;
      status = merged["status"];
      entry["message"] = merged["message"];
      if (!args.quiet) PrintSummary(merged, out_dir + "/" + file);
    } else {
      entry["message"] = last.message;
      std::fprintf(stderr, "shardbench run: %s: %s\n", job.scenario.name.c_str(), last.message.c_str());
      if (job.expect != "error") worst = std::max(worst, last.exit_code);
    }
    // green: every check passed; red: a check failed; error: it could not run (bad input such
    // as a combination the engine refuses, or infrastructure).
    const std::string colour = status == "ok" ? "green" : status == "failed" ? "red" : "error";
    entry["status"] = status;
    entry["colour"] = colour;
    entry["as_expected"] = colour == job.expect;
    all_as_expected &= entry["as_expected"].get<bool>();
    index["instances"].push_back(entry);
    WriteFileAtomically(out_dir + "/index.json", index.dump(2) + "\n");  // progress survives a crash
  }
  // The run's own page (no base to compare with): results, memory, losses, provenance.
  const ResultSet written = LoadResultSet(out_dir);
  WriteFileAtomically(out_dir + "/dashboard.html", DashboardHtml({title, nullptr, nullptr, &written, nullptr}));
  if (!args.quiet) PrintIndex(index, out_dir);
  if (worst >= 2) return worst;
  return all_as_expected ? 0 : 1;
}

}  // namespace shardbench::cli
