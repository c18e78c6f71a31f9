#include "harness/run_target.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/comm/process_launcher.h"
#include "engine/comm/rendezvous.h"
#include "engine/common/error.h"
#include "harness/job_rank.h"
#include "harness/memory_plan.h"
#include "harness/node_launch.h"
#include "harness/output_dir.h"
#include "harness/repetition_launch.h"
#include "harness/suite.h"
#include "reporters/adaptive_repetitions.h"
#include "reporters/dashboard.h"
#include "reporters/gate_policy.h"
#include "reporters/provenance.h"
#include "reporters/launch_merge.h"
#include "reporters/result_set.h"
#include "reporters/results_reader.h"
#include "reporters/results_writer.h"
#include "reporters/run_result.h"
#include "harness/scenario/engine_registry.h"
#include "harness/scenario/scenario_parser.h"

namespace shardbench {
namespace fs = std::filesystem;
namespace {

std::function<void(const StepProgress&)> OnStep(const RunRequest& request, const RunDisplay& display) {
  if (request.quiet) return {};
  return display.on_step;
}

// This process is one rank of a job: the target is one resolved scenario (no matrix).
// --repetitions auto[:MAX] --target-mde X [--policy F], when asked for.
std::optional<AdaptiveRepetitions> AdaptivePlan(const RunRequest& request) {
  if (request.target_mde && !request.auto_max) throw InputError("--target-mde needs --repetitions auto[:MAX]");
  if (!request.auto_max) return std::nullopt;
  if (!request.target_mde) throw InputError("--repetitions auto needs --target-mde X (0.10 = catch a 10% change)");
  return AdaptiveRepetitions{CheckRelativeChange(*request.target_mde, "--target-mde"), *request.auto_max,
                             request.policy.empty() ? DefaultGatePolicy() : LoadGatePolicy(request.policy)};
}

void PrintInstanceHeader(const Job& job, const std::optional<AdaptiveRepetitions>& adaptive) {
  const Scenario& s = job.scenario;
  if (adaptive) {
    std::printf("== %s (%d rank%s, launches until it could catch %.1f%%, at most %d)\n", s.name.c_str(), s.world_size,
                s.world_size > 1 ? "s" : "", 100 * adaptive->target_mde, adaptive->max);
  } else {
    std::printf("== %s (%d rank%s, %d repetition%s)\n", s.name.c_str(), s.world_size, s.world_size > 1 ? "s" : "",
                job.repetitions, job.repetitions > 1 ? "s" : "");
  }
}

// How the repetitions of an instance run: launched from here (our own ranks, or in process),
// or with this process as one rank of an outside-launched job (every rank runs this loop).
struct Repetitions {
  std::function<LaunchOutcome(const Scenario&, const std::string& rep_dir)> run;
  std::function<bool(bool)> agree;  // rank 0's decision (stop?), on every rank
  bool writer = true;               // this process writes the run directory
};

// The launches of one instance: its repetitions, or (adaptive) until pinned or MAX.
struct InstanceLaunches {
  std::vector<StoredResult> reps;  // the results, in launch order (the writer's)
  LaunchOutcome last;
  std::optional<PinStatus> pin;
};

InstanceLaunches LaunchInstance(const Job& job, size_t instances, const std::string& out_dir,
                                std::optional<AdaptiveRepetitions>& adaptive, const Repetitions& repetitions) {
  const std::string safe = SafeName(job.scenario.name);
  InstanceLaunches l;
  const bool counted = job.scenario.profile.instructions;  // exact figures only: one launch
  for (int r = 0; r < (adaptive && !counted ? adaptive->max : job.repetitions); ++r) {
    const std::string rep_dir = out_dir + "/" + safe + "/rep" + std::to_string(r);
    l.last = repetitions.run(job.scenario, rep_dir);
    const std::string result = rep_dir + "/result.json";
    bool stop = l.last.exit_code > 1;
    if (repetitions.writer && !stop) {
      stop = !fs::is_regular_file(result);
      if (!stop) l.reps.push_back(ReadResultFile(ReadJsonFile(result), result));
      if (!stop && adaptive && !counted) {
        // The comparison's family: this instance's gated sampled metrics, once per instance.
        adaptive->family_size = std::max<size_t>(1, GatedSampledMetrics(l.reps.front(), adaptive->policy) * instances);
        l.pin = PinnedSoFar(l.reps, *adaptive);
        stop = l.pin->pinned;
      }
    }
    if (repetitions.agree(stop)) break;
  }
  return l;
}

// The index entry of an instance while it runs: what a run killed mid-instance (kill -9, the
// machine lost) leaves behind. Readers treat it as an instance that could not run (red in
// compare); a torchrun restart runs it again.
// What every index entry of an instance starts with: who it is and what its suite expects.
nlohmann::json EntryOf(const Job& job) {
  return {{"name", job.scenario.name}, {"file", nullptr}, {"expect", job.expect}, {"why", job.why}};
}

nlohmann::json RunningEntryJson(const Job& job) {
  nlohmann::json entry = EntryOf(job);
  entry.update({{"status", "running"}, {"colour", "error"}, {"as_expected", false},
                {"message", "started at " + NowIso8601Utc() + "; the run ended before this instance finished"}});
  return entry;
}

// The index entry of one instance; writes DIR/<instance>.json, its repetitions merged.
// `worst`: the worst exit code of an instance that could not run and was not expected not to.
nlohmann::json IndexEntryJson(const Job& job, const InstanceLaunches& l, const std::optional<AdaptiveRepetitions>& adaptive,
                          const std::string& out_dir, const RunRequest& request, const RunDisplay& display, int& worst) {
  nlohmann::json entry = EntryOf(job);
  entry["repetitions"] = l.reps.size();
  if (adaptive && l.pin) {
    nlohmann::json mde = nlohmann::json::object();
    for (const auto& [metric, v] : l.pin->mde) mde[metric] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
    entry["adaptive"] = {{"target_mde", adaptive->target_mde}, {"max", adaptive->max},
                         {"stopped", l.pin->pinned ? "pinned" : "max"}, {"mde", mde}};
    std::printf("== %s: %zu launch%s, %s: %s\n", job.scenario.name.c_str(), l.reps.size(), l.reps.size() == 1 ? "" : "es",
                l.pin->pinned ? "pinned" : "reached MAX", l.pin->Describe(adaptive->target_mde).c_str());
  }
  std::string status = "error";
  if (!l.reps.empty() && l.last.exit_code <= 1) {
    std::vector<LaunchResult> launches;
    for (size_t r = 0; r < l.reps.size(); ++r) launches.push_back({l.reps[r], "repetition " + std::to_string(r)});
    const nlohmann::json merged = ToJson(MergeLaunches(launches));
    const std::string file = SafeName(job.scenario.name) + ".json";
    WriteFileAtomically(out_dir + "/" + file, merged.dump(2) + "\n");
    entry["file"] = file;
    status = merged["status"];
    entry["message"] = merged["message"];
    if (!request.quiet && display.on_instance) display.on_instance(merged, out_dir + "/" + file);
  } else {
    entry["message"] = l.last.message;
    std::fprintf(stderr, "shardbench run: %s: %s\n", job.scenario.name.c_str(), l.last.message.c_str());
    if (job.expect != "error") worst = std::max(worst, l.last.exit_code);
  }
  const std::string colour = Colour(status);
  entry["status"] = status;
  entry["colour"] = colour;
  entry["as_expected"] = colour == job.expect;
  return entry;
}

}  // namespace


namespace {

// The target resolved (bad input fails here, before any launch): its instances, title and
// the adaptive plan.
struct ResolvedTarget {
  std::vector<Job> jobs;
  std::string title;
  std::optional<AdaptiveRepetitions> adaptive;
};

std::vector<Job> OnlyMatching(std::vector<Job> jobs, const std::vector<std::string>& globs) {
  std::vector<Job> kept;
  std::string names;
  for (Job& job : jobs) {
    names += (names.empty() ? "" : ", ") + job.scenario.name;
    bool match = false;
    // An instance's own name matches itself: its brackets are not a glob's character class.
    for (const auto& g : globs) match |= g == job.scenario.name || GlobMatch(g, job.scenario.name);
    if (match) kept.push_back(std::move(job));
  }
  if (kept.empty()) {
    std::string asked;
    for (const auto& g : globs) asked += (asked.empty() ? "'" : ", '") + g + "'";
    throw InputError("--only " + asked + " matches no instance of this target (its instances: " + names + ")");
  }
  return kept;
}

ResolvedTarget Resolve(const RunRequest& request, int world_size) {
  std::vector<std::string> overrides = request.overrides;
  if (world_size > 0) overrides.push_back("world_size=" + std::to_string(world_size));
  if (request.trace) overrides.push_back("profile.trace=true");
  if (request.repetitions < 0 || request.repetitions > kMaxRepetitions) {
    throw InputError("--repetitions must be from 1 to " + std::to_string(kMaxRepetitions) + ", got " +
                     std::to_string(request.repetitions));
  }
  ResolvedTarget t;
  t.jobs = ResolveTarget(request.target, overrides, &t.title);
  if (!request.only.empty()) t.jobs = OnlyMatching(std::move(t.jobs), request.only);
  if (!request.release_side.empty()) {
    auto varies = [](const Job& job) { return IsPeerEngine(job.scenario.engine) && !SpecOf(job.scenario.engine).default_peer_env; };
    t.jobs.erase(std::remove_if(t.jobs.begin(), t.jobs.end(), [&](const Job& job) { return !varies(job); }), t.jobs.end());
    if (t.jobs.empty()) {
      throw InputError(request.target + ": no instance runs a peer engine in a peer environment (torch_fsdp1, torch_fsdp2, "
                       "accelerate): a release matrix varies the peer's libraries, ours run the same in every side");
    }
    for (Job& job : t.jobs) {
      ApplyOverride(job.scenario, request.release_side);
      ValidateScenario(job.scenario);
    }
  }
  if (request.repetitions > 0) {
    for (Job& job : t.jobs) job.repetitions = request.repetitions;
  }
  // A counted instance (profile.instructions) reports exact figures only, each launch tens of
  // seconds under valgrind: one launch answers.
  for (Job& job : t.jobs) {
    if (job.scenario.profile.instructions) job.repetitions = 1;
  }
  t.adaptive = AdaptivePlan(request);
  return t;
}

// Index entries (by instance name) an earlier attempt of this job finished: kept, not run again.
using Finished = std::map<std::string, nlohmann::json>;

// The instances after an interrupted one, in the index as ones that could not run.
void MarkNotRun(const std::vector<Job>& jobs, size_t from, nlohmann::json& index, int& worst) {
  for (size_t k = from; k < jobs.size(); ++k) {
    nlohmann::json entry = EntryOf(jobs[k]);
    entry.update({{"status", "error"}, {"colour", "error"}, {"as_expected", false},
                  {"message", std::string("not run: the run was interrupted (") + strsignal(comm::InterruptReceived()) + ")"}});
    index["instances"].push_back(entry);
  }
  worst = std::max(worst, static_cast<int>(ExitCode::kInfra));
}

// Every instance, in order; the writer writes DIR/<instance>.json, DIR/index.json (after each
// instance: progress survives a crash) and the dashboard. Returns the exit code.
int RunInstances(ResolvedTarget& t, const std::string& out_dir, const Repetitions& repetitions,
                 const RunRequest& request, const RunDisplay& display, const Finished& earlier = {}) {
  nlohmann::json index = {{"schema_version", kResultsSchemaVersion}, {"target", t.title},
                          {"started_at", NowIso8601Utc()}, {"instances", nlohmann::json::array()}};
  if (repetitions.writer) fs::create_directories(out_dir);
  int worst = 0;
  bool all_as_expected = true;
  for (const Job& job : t.jobs) {
    if (auto done = earlier.find(job.scenario.name); done != earlier.end()) {
      if (!repetitions.writer) continue;
      if (!request.quiet) std::printf("== %s: finished by an earlier attempt, kept\n", job.scenario.name.c_str());
      all_as_expected &= done->second["as_expected"].get<bool>();
      index["instances"].push_back(done->second);
      continue;
    }
    if (!request.quiet && repetitions.writer) PrintInstanceHeader(job, t.adaptive);
    if (repetitions.writer) {  // a launcher killed from here on leaves an index naming this instance
      nlohmann::json running = index;
      running["instances"].push_back(RunningEntryJson(job));
      WriteFileAtomically(out_dir + "/index.json", running.dump(2) + "\n");
    }
    const InstanceLaunches launches = LaunchInstance(job, t.jobs.size(), out_dir, t.adaptive, repetitions);
    const bool interrupted = repetitions.agree(comm::InterruptReceived() != 0);
    if (repetitions.writer) {
      const nlohmann::json entry = IndexEntryJson(job, launches, t.adaptive, out_dir, request, display, worst);
      all_as_expected &= entry["as_expected"].get<bool>();
      index["instances"].push_back(entry);
      WriteFileAtomically(out_dir + "/index.json", index.dump(2) + "\n");
    }
    if (interrupted) {  // Ctrl-C stops the run, not only its instance: the rest are listed as not run
      if (repetitions.writer) {
        MarkNotRun(t.jobs, static_cast<size_t>(&job - t.jobs.data()) + 1, index, worst);
        WriteFileAtomically(out_dir + "/index.json", index.dump(2) + "\n");
      }
      break;
    }
  }
  if (!repetitions.writer) return 0;
  // The run's own page (no base to compare with): results, memory, losses, provenance.
  const ResultSet written = LoadResultSet(out_dir);
  DashboardInput page{t.title, nullptr, nullptr, &written, nullptr};
  page.page_dir = out_dir;  // its links (traces) are relative to the run directory
  WriteFileAtomically(out_dir + "/dashboard.html", DashboardHtml(page));
  if (display.on_index) display.on_index(index, out_dir);  // quiet too: the display decides what a quiet run shows
  if (worst >= 2) return worst;
  return all_as_expected ? 0 : 1;
}

std::string DefaultOutDir(const RunRequest& request, const ResolvedTarget& t) {
  if (request.out_dir.empty()) return "results/" + SafeName(t.title) + "-" + Timestamp();
  // "-x" is a directory to the user; on a rank's or a peer's command line, the paths made from
  // it ("-x/smoke/rep0") would read as options.
  return request.out_dir[0] == '-' ? "./" + request.out_dir : request.out_dir;
}

// After torchrun restarted the job (--max-restarts; TORCHELASTIC_RESTART_COUNT > 0): the
// instances an earlier attempt finished (a result, green or red) keep their index entries and
// files; the others (not reached, or cut short by the failure) run again. Rank 0 reads its
// index; every rank learns the names.
Finished FinishedEarlier(JobRank& job, const std::string& out_dir) {
  Finished done;
  std::string names;
  const std::string path = out_dir + "/index.json";
  if (job.writer() && job.env().restart_count > 0 && fs::is_regular_file(path)) {
    const nlohmann::json index = ReadJsonFile(path);
    const std::vector<IndexEntry> entries = ReadIndex(index, path);
    for (size_t i = 0; i < entries.size(); ++i) {
      const IndexEntry& e = entries[i];
      if (!e.name || !e.file || !e.status || (*e.status != "ok" && *e.status != "failed")) continue;
      done[*e.name] = index["instances"][i];
      names += *e.name + "\n";
    }
  }
  std::istringstream all(job.Broadcast("finished_earlier", names));
  for (std::string name; std::getline(all, name);) done.try_emplace(name, nlohmann::json());
  return done;
}

// This process is one rank of a job an outside launcher started: the whole target, in
// lockstep with the other ranks; rank 0 writes the directory and says the exit code.
int RunTargetAsJobRank(const RunRequest& request, const comm::RankEnv& env, const RunDisplay& display) {
  if (request.nproc > 0) {
    throw InputError("--nproc starts ranks here; inside a torchrun/srun job the world size is the launcher's (WORLD_SIZE=" +
                     std::to_string(env.world_size) + ")");
  }
  ResolvedTarget t = Resolve(request, env.world_size);
  double longest = 0;
  for (const Job& job : t.jobs) longest = std::max(longest, job.scenario.timeout_s);
  JobRank job(env, std::chrono::milliseconds(static_cast<int64_t>(longest * 1000)));
  std::vector<std::string> names, resolved;
  for (const Job& j : t.jobs) {
    names.push_back(j.scenario.name);
    resolved.push_back(YAML::Dump(ScenarioToYaml(j.scenario)) + "\nrepetitions: " + std::to_string(j.repetitions));
  }
  job.AgreeOnPlan(names, resolved);
  const std::string out_dir = job.Broadcast("out_dir", DefaultOutDir(request, t));
  // Rank 0 writes the directory and holds its lock; every rank learns whether it got it.
  std::unique_ptr<OutputDirLock> lock;
  std::string refusal;
  if (job.writer()) {
    try {
      lock = std::make_unique<OutputDirLock>(out_dir, job.env().restart_count > 0);
    } catch (const InputError& e) {
      refusal = e.what();
    }
  }
  refusal = job.Broadcast("out_lock", refusal);
  if (!refusal.empty()) throw InputError(refusal);
  job.CheckSharedDirectory(out_dir);
  const Finished earlier = FinishedEarlier(job, out_dir);
  int decisions = 0;
  Repetitions repetitions{
      [&](const Scenario& s, const std::string& rep_dir) { return job.RunRepetition(s, rep_dir, OnStep(request, display)); },
      [&](bool stop) { return job.Broadcast("stop" + std::to_string(decisions++), stop ? "1" : "0") == "1"; },
      job.writer()};
  const int code = RunInstances(t, out_dir, repetitions, request, display, earlier);
  return std::stoi(job.Broadcast("exit", std::to_string(code)));
}

}  // namespace

int RunTarget(const RunRequest& request, const RunDisplay& display, const std::string& self_exe) {
  const comm::RankEnv env = comm::RankEnv::FromEnvironment();
  if (env.from_launcher) return RunTargetAsJobRank(request, env, display);
  if (WantsNodeLaunch(request)) return LaunchNodeRanks(request, self_exe);
  if (request.nproc < 0) throw InputError("--nproc must be at least 1, got " + std::to_string(request.nproc));
  ResolvedTarget t = Resolve(request, request.nproc);
  for (const Job& job : t.jobs) {
    comm::CheckLocalRanks(job.scenario.world_size, "instance '" + job.scenario.name + "' (world_size)");
    CheckFitsThisMachine(job.scenario, job.scenario.world_size);
  }
  const Repetitions repetitions{[&](const Scenario& s, const std::string& rep_dir) {
                                  return LaunchRepetition(s, rep_dir, self_exe, request.quiet, OnStep(request, display));
                                },
                                [](bool stop) { return stop; }, true};
  const std::string out_dir = DefaultOutDir(request, t);
  const OutputDirLock lock(out_dir);
  return RunInstances(t, out_dir, repetitions, request, display);
}

int RunRepetitionRank(const RunRequest& request, const RunDisplay& display) {
  const comm::RankEnv env = comm::RankEnv::FromEnvironment();
  if (!env.from_launcher) {
    throw InputError("`shardbench rank` is one rank of a repetition shardbench's launcher started (RANK, WORLD_SIZE "
                     "and MASTER_ADDR set); use `shardbench run`");
  }
  const Scenario s = LoadScenarioFile(request.target, request.overrides);
  const std::string out = request.out_dir;
  try {
    return RunAsRank(s, env, out, OnStep(request, display));
  } catch (const std::exception& e) {
    // Leave the reason where the launching process (and the index) can find it.
    if (env.rank == 0) WriteFileAtomically(out + "/error.txt", std::string(e.what()) + "\n");
    throw;
  }
}

}  // namespace shardbench
