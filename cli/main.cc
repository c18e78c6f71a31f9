// The `shardbench` command: parses arguments and calls the layers below. Exit codes follow
// DESIGN.md: 0 ok, 1 a check or gate failed, 2 bad input or usage, 3 infrastructure.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/batches_command.h"
#include "cli/compare_command.h"
#include "cli/merge_command.h"
#include "cli/run_command.h"
#include "cli/shrink_command.h"
#include "engine/common/error.h"
#include "engine/model/llama_config.h"
#include "reporters/adaptive_repetitions.h"
#include "scenarios/scenario_parser.h"
#include "harness/memory_plan.h"
#include "harness/suite.h"

namespace {

std::string SelfExe(const char* argv0) {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return argv0;
  buf[n] = '\0';
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shardbench;
  CLI::App app{"shardbench: benchmark and regression harness for sharded fine-tuning"};
  app.require_subcommand(1);

  cli::RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "Run a scenario across local ranks (or as one rank under torchrun/srun)");
  run_cmd->add_option("target", run.target, "Suite or scenario: a YAML file or a shipped name (see `list`)")->required();
  run_cmd->add_option("--nproc", run.nproc, "Local ranks to spawn (default: the scenario's world_size)");
  run_cmd->add_option("--out", run.out_dir, "Results directory (default: results/<name>-<timestamp>)");
  run_cmd->add_flag("--quiet", run.quiet, "No progress lines or summary");
  std::string run_repetitions;
  run_cmd->add_option("--repetitions", run_repetitions, "Launch every instance N times (default: the suite's), or auto[:MAX] "
                                                        "with --target-mde: until its gated metrics are pinned (MAX 20)");
  run_cmd->add_option("--target-mde", run.target_mde, "With --repetitions auto: the change (0.10 = 10%) the gated sampled "
                                                      "metrics must be able to catch");
  run_cmd->add_option("--policy", run.policy, "With --repetitions auto: the gate policy that says which metrics are gated");
  run_cmd->add_option("overrides", run.overrides, "key=value overrides, e.g. train.steps=5 lora.enabled=true");

  std::string show_target;
  std::vector<std::string> show_overrides;
  auto* show_cmd = app.add_subcommand("show", "Print the fully resolved scenario instances (matrix expanded)");
  show_cmd->add_option("target", show_target, "Suite or scenario: a file or a shipped name")->required();
  show_cmd->add_option("overrides", show_overrides, "key=value overrides");

  auto* models_cmd = app.add_subcommand("models", "List the named model configs");
  auto* list_cmd = app.add_subcommand("list", "List the shipped suites and scenarios");
  std::string plan_target;
  std::vector<std::string> plan_overrides;
  auto* plan_cmd = app.add_subcommand("plan", "Predict memory per rank and category from a scenario (allocates nothing)");
  plan_cmd->add_option("target", plan_target, "Scenario or suite: a file or a shipped name")->required();
  plan_cmd->add_option("overrides", plan_overrides, "key=value overrides, e.g. model=llama2-70b world_size=8");

  cli::CompareArgs compare;
  auto* compare_cmd = app.add_subcommand("compare", "Judge CURRENT results against BASE under a gate policy (exit 1 if red)");
  compare_cmd->add_option("base", compare.base, "Base results: a result file, a run's index.json, or its directory")->required();
  compare_cmd->add_option("current", compare.current, "Current results, the same forms (optional with --engines)");
  compare_cmd->add_option("--policy", compare.policy, "Gate policy YAML (default: zero tolerance on exact metrics, "
                                                      "Mann-Whitney U at 0.05 with a 3% minimum effect on sampled ones)");
  compare_cmd->add_option("--markdown", compare.markdown, "Write a Markdown report (a PR comment) here");
  compare_cmd->add_option("--junit", compare.junit, "Write JUnit XML here");
  compare_cmd->add_option("--html", compare.html, "Write the HTML dashboard here");
  compare_cmd->add_option("--history", compare.history, "Show this history directory's trends in the dashboard too");
  compare_cmd->add_option("--today", compare.today, "Date for suppression expiry, YYYY-MM-DD (default: today, UTC)");
  compare_cmd->add_flag("--quiet", compare.quiet, "Print only the verdict line");
  compare_cmd->add_option("--max-mde", compare.max_mde, "Sampled metrics that could not have caught a change this large "
                                                        "(0.05 = 5%) are UNDERPOWERED (overrides the policy's default)");
  compare_cmd->add_flag("--engines", compare.engines, "Engines side by side: pair instances that ran the same scenario on "
                                                      "two engines (loss parity, tokens/s, memory and init ratios)");

  cli::MergeArgs merge;
  auto* merge_cmd = app.add_subcommand("merge", "Pool several runs of the same target into one run directory "
                                                "(their launches add up), for compare and history");
  merge_cmd->add_option("runs", merge.runs, "Runs: result files, index.json files or run directories")->required();
  merge_cmd->add_option("--out", merge.out_dir, "The pooled run directory (must not hold results yet)")->required();

  cli::HistoryArgs history;
  auto* history_cmd = app.add_subcommand("history", "Find change points in every metric's series over a directory of runs");
  history_cmd->add_option("dir", history.dir, "A directory holding one results directory (or file) per run")->required();
  history_cmd->add_option("--instance", history.instance, "Only instances matching this glob");
  history_cmd->add_option("--metric", history.metric, "Only metrics matching this glob");
  history_cmd->add_option("--markdown", history.markdown, "Write the change points as Markdown here");
  history_cmd->add_option("--html", history.html, "Write the trends dashboard here");

  cli::ShrinkArgs shrink;
  auto* shrink_cmd = app.add_subcommand("shrink", "Find the smallest scenario whose metric stays at least a value");
  shrink_cmd->add_option("target", shrink.target, "Scenario: a file or a shipped name")->required();
  shrink_cmd->add_option("--metric", shrink.metric, "The metric that shows the problem, e.g. grad_blowup")->required();
  shrink_cmd->add_option("--at-least", shrink.at_least, "The value it must keep")->required();
  shrink_cmd->add_option("--out", shrink.out_dir, "Output directory (default results/shrink-<name>)");
  shrink_cmd->add_option("--max-runs", shrink.max_runs, "Give up reducing after this many runs (default 60)");
  shrink_cmd->add_option("overrides", shrink.overrides, "key=value overrides of the starting scenario");

  cli::BatchesArgs batches;
  auto* batches_cmd = app.add_subcommand("batches", "Print the token batches every rank trains on (JSON), step by step");
  batches_cmd->add_option("target", batches.target, "One scenario: a file or a shipped name")->required();
  batches_cmd->add_option("--steps", batches.steps, "Steps to print, from step 0 (default 1)");
  batches_cmd->add_option("overrides", batches.overrides, "key=value overrides");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kBadInput);
  }

  try {
    if (*run_cmd) {
      if (!run_repetitions.empty()) {
        run.auto_max = ParseAutoRepetitions(run_repetitions);
        if (!run.auto_max) {
          char* end = nullptr;
          const long n = std::strtol(run_repetitions.c_str(), &end, 10);
          if (*end != '\0' || n < 1 || n > 100000) {
            throw InputError("--repetitions " + run_repetitions + ": expected a count >= 1, auto or auto:MAX");
          }
          run.repetitions = static_cast<int>(n);
        }
      }
      return cli::RunCommand(run, SelfExe(argv[0]));
    }
    if (*compare_cmd) return cli::CompareCommand(compare);
    if (*history_cmd) return cli::HistoryCommand(history);
    if (*merge_cmd) return cli::MergeCommand(merge);
    if (*shrink_cmd) return cli::ShrinkCommand(shrink, SelfExe(argv[0]));
    if (*batches_cmd) return cli::BatchesCommand(batches);
    if (*show_cmd) {
      for (const Job& job : ResolveTarget(show_target, show_overrides, nullptr)) {
        std::cout << "# " << job.scenario.name << "  (repetitions " << job.repetitions << ", expect " << job.expect
                  << ")\n---\n" << ScenarioToYaml(job.scenario) << "\n\n";
      }
      return 0;
    }
    if (*plan_cmd) {
      const double gib = 1024.0 * 1024 * 1024;
      std::printf("%-64s %9s %9s %9s %9s %9s %9s\n", "instance (rank 0, GiB)", "params", "unsh.peak", "grads", "optim",
                  "activ.*", "total");
      for (const Job& job : ResolveTarget(plan_target, plan_overrides, nullptr)) {
        const auto p = PlanScenarioMemory(job.scenario, 0);
        std::printf("%-64s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", job.scenario.name.c_str(), p.params_sharded / gib,
                    p.params_unsharded_peak / gib, p.grads / gib, p.optim_state / gib, p.activations / gib, p.total() / gib);
      }
      std::printf("* activations are an estimate (engine/memory/memory_model.cc); the rest follows the engines' layouts\n");
      return 0;
    }
    if (*list_cmd) {
      for (const auto& row : ListShipped()) std::printf("%-9s %-18s %s\n", row[0].c_str(), row[1].c_str(), row[2].c_str());
      return 0;
    }
    if (*models_cmd) {
      for (const auto& name : model::NamedLlamaConfigs()) {
        const auto c = model::NamedLlamaConfig(name);
        std::printf("%-11s %6.2fB params  hidden %lld  layers %lld  heads %lld/%lld kv  vocab %lld\n", name.c_str(),
                    c.parameter_count() / 1e9, (long long)c.hidden_size, (long long)c.num_hidden_layers,
                    (long long)c.num_attention_heads, (long long)c.num_key_value_heads, (long long)c.vocab_size);
      }
      return 0;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "shardbench: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardbench: internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::kInfra);
  }
  return 0;
}
