#include "cli/shrink_command.h"

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/common/durable_file.h"
#include "engine/common/error.h"
#include "reporters/result_set.h"
#include "harness/scenario/scenario_parser.h"
#include "harness/run_target.h"
#include "harness/shrink.h"
#include "harness/suite.h"

namespace shardbench::cli {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The metric of the one instance of a run directory: an exact metric's value (its largest
// rank), a sampled one's median. None when the run produced no result.
std::optional<double> MetricOf(const fs::path& run_dir, const std::string& name) {
  if (!fs::exists(run_dir / "index.json")) return std::nullopt;
  const ResultSet run = LoadResultSet(run_dir.string());
  if (run.instances.empty() || run.instances.front().result.is_null()) return std::nullopt;
  std::string known;
  for (const auto& m : run.instances.front().result["metrics"]) {
    if (m["name"] == name) return m["median"].is_null() ? std::nullopt : std::optional<double>(m["median"].get<double>());
    known += (known.empty() ? "" : ", ") + m["name"].get<std::string>();
  }
  throw InputError("shrink --metric: the results have no metric '" + name + "' (they have: " + known + ")");
}

}  // namespace

int ShrinkCommand(const ShrinkArgs& args, const std::string& self_exe) {
  if (args.metric.empty()) throw InputError("shrink: --metric is required (e.g. grad_blowup)");
  if (args.max_runs < 2) throw InputError("shrink: --max-runs must be at least 2");
  auto resolve = [&](const std::vector<std::string>& reductions) {
    const auto jobs = ResolveTarget(args.target, Concat(args.overrides, reductions), nullptr);
    if (jobs.size() != 1) {
      throw InputError("shrink: '" + args.target + "' resolves to " + std::to_string(jobs.size()) +
                       " instances; shrink takes one (pick a matrix point with overrides)");
    }
    return jobs.front().scenario;
  };
  const Scenario original = resolve({});  // bad input fails before any run
  const fs::path out = args.out_dir.empty() ? fs::path("results") / ("shrink-" + original.name) : fs::path(args.out_dir);
  fs::create_directories(out);
  int attempt = 0;
  std::map<std::string, fs::path> dir_of;  // overrides joined -> its run directory
  auto evaluate = [&](const std::vector<std::string>& reductions) -> std::optional<double> {
    char name[32];
    std::snprintf(name, sizeof(name), "attempt-%02d", attempt++);
    const fs::path dir = out / name;
    fs::remove_all(dir);
    RunRequest run;
    run.target = args.target;
    run.out_dir = dir.string();
    run.overrides = Concat(args.overrides, reductions);
    run.quiet = true;
    const int rc = RunTarget(run, {}, self_exe);
    std::string key;
    for (const auto& r : reductions) key += r + " ";
    dir_of[key] = dir;
    const std::optional<double> value = rc <= 1 ? MetricOf(dir, args.metric) : std::nullopt;
    std::printf("shrink: %s %s -> %s\n", name, key.empty() ? "(as given)" : key.c_str(),
                value ? std::to_string(*value).c_str() : "failed");
    std::fflush(stdout);
    return value;
  };
  const ShrinkResult result = Shrink(resolve, evaluate, args.at_least, args.max_runs);

  std::string key;
  for (const auto& r : result.overrides) key += r + " ";
  fs::remove_all(out / "minimal");
  fs::rename(dir_of.at(key), out / "minimal");
  const Scenario minimal = resolve(result.overrides);
  std::string yaml = "# Written by `shardbench shrink " + args.target + " --metric " + args.metric + " --at-least " +
                     std::to_string(args.at_least) + "`: the smallest scenario found whose " + args.metric +
                     " is still at least that (" + std::to_string(result.value) + ").\n";
  yaml += YAML::Dump(ScenarioToYaml(minimal)) + "\n";
  WriteFileAtomically((out / "minimal.yaml").string(), yaml);
  nlohmann::json log = {{"target", args.target}, {"metric", args.metric}, {"at_least", args.at_least},
                        {"overrides", args.overrides}, {"reductions", result.overrides}, {"value", result.value},
                        {"attempts", nlohmann::json::array()}};
  for (const auto& a : result.attempts) {
    log["attempts"].push_back({{"reductions", a.overrides}, {"value", a.value ? nlohmann::json(*a.value) : nlohmann::json()},
                               {"kept", a.kept}});
  }
  WriteFileAtomically((out / "shrink.json").string(), log.dump(2) + "\n");
  std::printf("shrink: %s stays >= %g at %g with %s after %zu runs; written %s\n", args.metric.c_str(), args.at_least,
              result.value, key.empty() ? "nothing reduced" : key.c_str(), result.attempts.size(),
              (out / "minimal.yaml").string().c_str());
  return 0;
}

}  // namespace shardbench::cli
