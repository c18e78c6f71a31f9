#include "harness/run_target.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/comm/rendezvous.h"
#include "engine/common/error.h"
#include "harness/repetition_launch.h"
#include "harness/suite.h"
#include "reporters/adaptive_repetitions.h"
#include "reporters/dashboard.h"
#include "reporters/gate_policy.h"
#include "reporters/provenance.h"
#include "reporters/repetitions.h"
#include "reporters/result_set.h"
#include "reporters/run_result.h"
#include "harness/scenario/scenario_parser.h"

namespace shardbench {
namespace fs = std::filesystem;
namespace {

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::function<void(const StepProgress&)> OnStep(const RunRequest& request, const RunDisplay& display) {
  if (request.quiet) return {};
  return display.on_step;
}

// This process is one rank of a job: the target is one resolved scenario (no matrix).
int RunLaunchedRank(const RunRequest& request, const comm::RankEnv& env, const RunDisplay& display) {
  const Scenario s = LoadScenarioFile(request.target, request.overrides);
  const std::string out = request.out_dir.empty() ? "results/" + SafeName(s.name) : request.out_dir;
  try {
    return RunAsRank(s, env, out, OnStep(request, display));
  } catch (const std::exception& e) {
    // Leave the reason where the launching process (and the index) can find it.
    if (env.rank == 0) WriteFileAtomically(out + "/error.txt", std::string(e.what()) + "\n");
    throw;
  }
}

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

// The launches of one instance: its repetitions, or (adaptive) until pinned or MAX.
struct InstanceLaunches {
  std::vector<nlohmann::json> reps;  // the results, in launch order
  LaunchOutcome last;
  std::optional<PinStatus> pin;
};

InstanceLaunches LaunchInstance(const Job& job, size_t instances, const std::string& out_dir,
                                std::optional<AdaptiveRepetitions>& adaptive, const RunRequest& request,
                                const RunDisplay& display, const std::string& self_exe) {
  const std::string safe = SafeName(job.scenario.name);
  InstanceLaunches l;
  for (int r = 0; r < (adaptive ? adaptive->max : job.repetitions); ++r) {
    const std::string rep_dir = out_dir + "/" + safe + "/rep" + std::to_string(r);
    l.last = LaunchRepetition(job.scenario, rep_dir, self_exe, request.quiet, OnStep(request, display));
    const std::string result = rep_dir + "/result.json";
    if (l.last.exit_code > 1 || !fs::is_regular_file(result)) break;
    l.reps.push_back(ReadJson(result));
    if (adaptive) {
      // The comparison's family: this instance's gated sampled metrics, once per instance.
      adaptive->family_size = std::max<size_t>(1, GatedSampledMetrics(l.reps.front(), adaptive->policy) * instances);
      l.pin = PinnedSoFar(l.reps, *adaptive);
      if (l.pin->pinned) break;
    }
  }
  return l;
}

// The index entry of one instance; writes DIR/<instance>.json, its repetitions merged.
// `worst`: the worst exit code of an instance that could not run and was not expected not to.
nlohmann::json IndexEntryJson(const Job& job, const InstanceLaunches& l, const std::optional<AdaptiveRepetitions>& adaptive,
                          const std::string& out_dir, const RunRequest& request, const RunDisplay& display, int& worst) {
  nlohmann::json entry = {{"name", job.scenario.name}, {"file", nullptr}, {"expect", job.expect}, {"why", job.why},
                          {"repetitions", l.reps.size()}};
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
    nlohmann::json merged = MergeRepetitions(l.reps);
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

std::string Colour(const std::string& status) { return status == "ok" ? "green" : status == "failed" ? "red" : "error"; }

int RunTarget(const RunRequest& request, const RunDisplay& display, const std::string& self_exe) {
  const comm::RankEnv env = comm::RankEnv::FromEnvironment();
  if (env.from_launcher) return RunLaunchedRank(request, env, display);
  std::vector<std::string> overrides = request.overrides;
  if (request.nproc < 0) throw InputError("--nproc must be at least 1, got " + std::to_string(request.nproc));
  if (request.nproc > 0) overrides.push_back("world_size=" + std::to_string(request.nproc));
  std::string title;
  if (request.repetitions < 0) {
    throw InputError("--repetitions must be at least 1, got " + std::to_string(request.repetitions));
  }
  std::vector<Job> jobs = ResolveTarget(request.target, overrides, &title);  // bad input fails before any launch
  if (request.repetitions > 0) {
    for (Job& job : jobs) job.repetitions = request.repetitions;
  }
  std::optional<AdaptiveRepetitions> adaptive = AdaptivePlan(request);
  const std::string out_dir = request.out_dir.empty() ? "results/" + SafeName(title) + "-" + Timestamp() : request.out_dir;
  fs::create_directories(out_dir);

  nlohmann::json index = {{"schema_version", kResultsSchemaVersion}, {"target", title}, {"started_at", NowIso8601Utc()},
                          {"instances", nlohmann::json::array()}};
  int worst = 0;
  bool all_as_expected = true;
  for (const Job& job : jobs) {
    if (!request.quiet) PrintInstanceHeader(job, adaptive);
    const InstanceLaunches launches = LaunchInstance(job, jobs.size(), out_dir, adaptive, request, display, self_exe);
    const nlohmann::json entry = IndexEntryJson(job, launches, adaptive, out_dir, request, display, worst);
    all_as_expected &= entry["as_expected"].get<bool>();
    index["instances"].push_back(entry);
    WriteFileAtomically(out_dir + "/index.json", index.dump(2) + "\n");  // progress survives a crash
  }
  // The run's own page (no base to compare with): results, memory, losses, provenance.
  const ResultSet written = LoadResultSet(out_dir);
  WriteFileAtomically(out_dir + "/dashboard.html", DashboardHtml({title, nullptr, nullptr, &written, nullptr}));
  if (!request.quiet && display.on_index) display.on_index(index, out_dir);
  if (worst >= 2) return worst;
  return all_as_expected ? 0 : 1;
}

}  // namespace shardbench
