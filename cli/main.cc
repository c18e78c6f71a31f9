// The `shardbench` command: parses arguments and calls the layers below. Exit codes
// (docs/architecture.md): 0 ok, 1 a check or gate failed, 2 bad input or usage, 3 infrastructure.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/batches_command.h"
#include "cli/compare_command.h"
#include "cli/convert_command.h"
#include "cli/export_command.h"
#include "cli/trace_command.h"
#include "cli/inspect_commands.h"
#include "cli/matrix_command.h"
#include "cli/merge_command.h"
#include "cli/option_checks.h"
#include "cli/run_command.h"
#include "cli/shrink_command.h"
#include "engine/common/error.h"
#include "engine/common/fast_exit.h"
#include "harness/scenario/scenario_parser.h"
#include "reporters/adaptive_repetitions.h"
#include "reporters/build_info.h"

namespace {

using namespace shardbench;

std::string SelfExe(const char* argv0) {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return argv0;
  buf[n] = '\0';
  return buf;
}

// One subcommand: its options bound to its arguments, and what runs when it is the one given.
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

// The repetition rank (harness/run_target.h): what our launcher starts on each rank of one
// repetition. Hidden from --help: users run `run`.
Subcommand AddRank(CLI::App& app) {
  auto args = std::make_shared<cli::RunArgs>();
  auto* cmd = app.add_subcommand("rank", "One rank of one repetition (started by `run`)")->group("");
  cmd->add_option("scenario", args->target, "The repetition's resolved scenario")->required();
  cmd->add_option("--out", args->out_dir, "The repetition's directory")->required();
  cmd->add_flag("--quiet", args->quiet, "No progress lines");
  return {cmd, [args] { return cli::RankCommand(*args); }};
}

Subcommand AddConvertCheckpoint(CLI::App& app) {
  auto args = std::make_shared<std::vector<std::string>>(3);
  auto* cmd = app.add_subcommand("convert-checkpoint", "Convert a SHARDED checkpoint between torch.distributed.checkpoint "
                                                       "(PyTorch's FSDP) and shardbench's, for checkpoint.load_from");
  cmd->add_option("direction", (*args)[0], "to-shardbench (DCP -> ours) or to-dcp (ours -> DCP)")
      ->required()
      ->check(CLI::IsMember({"to-shardbench", "to-dcp"}));
  cmd->add_option("src", (*args)[1], "The checkpoint directory to convert")->required();
  cmd->add_option("out", (*args)[2], "A new directory for the converted checkpoint (never overwritten)")->required();
  return {cmd, [args] { return cli::ConvertCheckpointCommand((*args)[0], (*args)[1], (*args)[2]); }};
}

Subcommand AddRun(CLI::App& app, const std::string& self_exe) {
  auto run = std::make_shared<cli::RunArgs>();
  auto repetitions = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("run", "Run a scenario across local ranks (or as one rank under torchrun/srun)");
  cmd->add_option("target", run->target, "Suite or scenario: a YAML file or a shipped name (see `list`)")->required();
  cmd->add_option("--nproc,--nproc-per-node", run->nproc, "Local ranks to spawn (default: the scenario's world_size)")
      ->check(cli::Positive());
  cmd->add_option("--nnodes", run->nnodes, "Nodes of the job, torchrun's way: each runs this command with its --node-rank")
      ->check(cli::Positive());
  cmd->add_option("--node-rank", run->node_rank, "This node's rank in 0..nnodes-1 (with --nnodes)")
      ->check(cli::NonNegative());
  cmd->add_option("--master-addr", run->master_addr, "With --nnodes: node 0's address, where rank 0 serves the store "
                                                     "(bound to it alone; 0.0.0.0 binds every address)");
  cmd->add_option("--master-port", run->master_port, "With --nnodes: the store's port on --master-addr")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--out", run->out_dir, "Results directory (default: results/<name>-<timestamp>)");
  cmd->add_flag("--quiet", run->quiet, "No progress lines or summary");
  cmd->add_option("--repetitions", *repetitions, "Launch every instance N times (default: the suite's), or auto[:MAX] "
                                                 "with --target-mde: until its gated metrics are pinned (MAX 20)");
  cmd->add_option("--target-mde", run->target_mde, "With --repetitions auto: the change (0.10 = 10%) the gated sampled "
                                                   "metrics must be able to catch");
  // One glob per --only (repeat the flag): a multi-value option would swallow the overrides after it.
  cmd->add_option("--only", run->only, "Run only the instances whose names match this glob (repeatable), e.g. 'smoke_*'")
      ->allow_extra_args(false);
  cmd->add_option("--policy", run->policy, "With --repetitions auto: the gate policy that says which metrics are gated");
  cmd->add_flag("--trace", run->trace, "Write every instance's per-rank timeline (profile.trace=true): "
                                       "<instance>/rep<N>/trace.json, for Perfetto UI or chrome://tracing");
  cmd->add_option("overrides", run->overrides, "key=value overrides, e.g. train.steps=5 lora.enabled=true");
  return {cmd, [run, repetitions, self_exe] {
            if (!repetitions->empty()) {
              run->auto_max = ParseAutoRepetitions(*repetitions);
              if (!run->auto_max) {
                char* end = nullptr;
                const long n = std::strtol(repetitions->c_str(), &end, 10);
                if (*end != '\0' || n < 1 || n > 100000) {
                  throw InputError("--repetitions " + *repetitions + ": expected a count >= 1, auto or auto:MAX");
                }
                run->repetitions = static_cast<int>(n);
              }
            }
            return cli::RunCommand(*run, self_exe);
          }};
}

Subcommand AddCompare(CLI::App& app) {
  auto compare = std::make_shared<cli::CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "Judge CURRENT results against BASE under a gate policy (exit 1 if red)");
  cmd->add_option("base", compare->base, "Base results: a result file, a run's index.json, or its directory")->required();
  cmd->add_option("current", compare->current, "Current results, the same forms (optional with --engines)");
  cmd->add_option("--policy", compare->policy, "Gate policy YAML (default: zero tolerance on exact metrics, "
                                               "Mann-Whitney U at 0.05 with a 3% minimum effect on sampled ones)");
  cmd->add_option("--markdown", compare->markdown, "Write a Markdown report (a PR comment) here");
  cmd->add_option("--junit", compare->junit, "Write JUnit XML here");
  cmd->add_option("--html", compare->html, "Write the HTML dashboard here");
  cmd->add_option("--history", compare->history, "Show this history directory's trends in the dashboard too");
  cmd->add_option("--today", compare->today, "Date for suppression expiry, YYYY-MM-DD (default: today, UTC)")
      ->check(cli::CalendarDate());
  cmd->add_flag("--quiet", compare->quiet, "Print only the verdict line");
  cmd->add_option("--max-mde", compare->max_mde, "Sampled metrics that could not have caught a change this large "
                                                 "(0.05 = 5%) are UNDERPOWERED (overrides the policy's default)");
  cmd->add_flag("--paired", compare->paired, "Both sides' launches ran round by round (ci/ab.sh): pair the i-th launch "
                                             "of each side and test with Wilcoxon's signed-rank test");
  cmd->add_flag("--engines", compare->engines, "Engines side by side: pair instances that ran the same scenario on "
                                               "two engines (loss parity, tokens/s, memory and init ratios)");
  return {cmd, [compare] { return cli::CompareCommand(*compare); }};
}

Subcommand AddMatrix(CLI::App& app, const std::string& self_exe) {
  auto args = std::make_shared<cli::MatrixArgs>();
  auto* cmd = app.add_subcommand("matrix", "A release matrix: the target's peer instances on each --env side, "
                                           "neighbours judged by the gate and their changes listed (or --bisect)");
  cmd->add_option("target", args->target, "Suite or scenario: a YAML file or a shipped name (see `list`)")->required();
  cmd->add_option("--env", args->envs, "A side, oldest first (repeatable): PACKAGE=VERSION,... over requirements.txt's "
                                       "pins (torch, transformers, peft, accelerate), or project")
      ->allow_extra_args(false);
  cmd->add_option("--bisect", args->bisect, "PACKAGE OLD NEW: the first release in the wheelhouse between OLD and NEW "
                                            "whose colours, exact metrics or warnings differ from OLD's")
      ->expected(3)
      ->allow_extra_args(false);
  cmd->add_option("--out", args->out_dir, "The matrix directory: a run directory per side, the reports (default "
                                          "results/matrix-<timestamp>)");
  cmd->add_option("--repetitions", args->repetitions, "Launches of every instance on each side (default: the target's)")
      ->check(cli::Positive());
  cmd->add_option("--policy", args->policy, "Gate policy for neighbours (default: the defaults)");
  cmd->add_option("--only", args->only, "Only the instances matching this glob (repeatable)")->allow_extra_args(false);
  cmd->add_option("--reuse", args->reuse, "An earlier matrix directory whose sides are read instead of run again "
                                          "(the reports are written anew under --out)");
  cmd->add_option("overrides", args->overrides, "key=value overrides for every side");
  return {cmd, [args, self_exe] { return cli::MatrixCommand(*args, self_exe); }};
}

Subcommand AddMerge(CLI::App& app) {
  auto merge = std::make_shared<cli::MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "Pool several runs of the same target into one run directory "
                                          "(their launches add up), for compare and history");
  cmd->add_option("runs", merge->runs, "Runs: result files, index.json files or run directories")->required();
  cmd->add_option("--out", merge->out_dir, "The pooled run directory (must not hold results yet)")->required();
  return {cmd, [merge] { return cli::MergeCommand(*merge); }};
}

Subcommand AddExport(CLI::App& app) {
  auto e = std::make_shared<cli::ExportArgs>();
  auto* cmd = app.add_subcommand("export", "Write a run's metrics for other benchmark tools: Google Benchmark JSON "
                                           "(compare.py), Bencher Metric Format, github-action-benchmark");
  cmd->add_option("run", e->run, "A run directory, index.json or result file")->required();
  cmd->add_option("--format", e->format, "gbench | bencher | gab-smaller | gab-bigger (github-action-benchmark's "
                                         "customSmallerIsBetter / customBiggerIsBetter)")->required();
  cmd->add_option("--out", e->out, "Write here (a new file) instead of stdout");
  return {cmd, [e] { return cli::ExportCommand(*e); }};
}

Subcommand AddTrace(CLI::App& app) {
  auto run = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("trace", "Read the per-rank timelines `run --trace` wrote");
  cmd->require_subcommand(1);
  auto* summarize = cmd->add_subcommand("summarize", "Per rank: where the measured steps went (compute, exposed "
                                                     "communication, optimizer, idle), the top 10 spans, the straggler");
  summarize->add_option("run", *run, "A run directory (every trace.json under it), or one trace.json")->required();
  return {cmd, [run] { return cli::TraceSummarizeCommand(*run); }};  // summarize, its one subcommand
}

Subcommand AddHistory(CLI::App& app) {
  auto history = std::make_shared<cli::HistoryArgs>();
  auto* cmd = app.add_subcommand("history", "Find change points in every metric's series over a directory of runs");
  cmd->add_option("dir", history->dir, "A directory holding one results directory (or file) per run")->required();
  cmd->add_option("--instance", history->instance, "Only instances matching this glob");
  cmd->add_option("--metric", history->metric, "Only metrics matching this glob");
  cmd->add_option("--markdown", history->markdown, "Write the change points as Markdown here");
  cmd->add_option("--html", history->html, "Write the trends dashboard here");
  cmd->add_option("--policy", history->policy, "Gate policy whose thresholds the dashboard draws (default: the defaults)");
  return {cmd, [history] { return cli::HistoryCommand(*history); }};
}

Subcommand AddShrink(CLI::App& app, const std::string& self_exe) {
  auto shrink = std::make_shared<cli::ShrinkArgs>();
  auto* cmd = app.add_subcommand("shrink", "Find the smallest scenario whose metric stays at least a value");
  cmd->add_option("target", shrink->target, "Scenario: a file or a shipped name")->required();
  cmd->add_option("--metric", shrink->metric, "The metric that shows the problem, e.g. grad_blowup")->required();
  cmd->add_option("--at-least", shrink->at_least, "The value it must keep")->required()->check(cli::Finite());
  cmd->add_option("--out", shrink->out_dir, "Output directory (default results/shrink-<name>)");
  cmd->add_option("--max-runs", shrink->max_runs, "Give up reducing after this many runs (default 60)");
  cmd->add_option("overrides", shrink->overrides, "key=value overrides of the starting scenario");
  return {cmd, [shrink, self_exe] { return cli::ShrinkCommand(*shrink, self_exe); }};
}

Subcommand AddBatches(CLI::App& app) {
  auto batches = std::make_shared<cli::BatchesArgs>();
  auto* cmd = app.add_subcommand("batches", "Print the token batches every rank trains on (JSON), step by step");
  cmd->add_option("target", batches->target, "One scenario: a file or a shipped name")->required();
  cmd->add_option("--steps", batches->steps, "Steps to print, from step 0 (default 1)");
  cmd->add_option("overrides", batches->overrides, "key=value overrides");
  return {cmd, [batches] { return cli::BatchesCommand(*batches); }};
}

// show and plan: a target and its overrides, resolved and printed (cli/inspect_commands.h).
Subcommand AddInspect(CLI::App& app, const std::string& name, const std::string& help,
                      int (*command)(const cli::TargetArgs&)) {
  auto args = std::make_shared<cli::TargetArgs>();
  auto* cmd = app.add_subcommand(name, help);
  cmd->add_option("target", args->target, "Suite or scenario: a file or a shipped name")->required();
  cmd->add_option("overrides", args->overrides, "key=value overrides, e.g. model=llama2-70b world_size=8");
  if (name == "show") cmd->add_flag("--all", args->all, "Every field, not only those that differ from the defaults");
  return {cmd, [args, command] { return command(*args); }};
}

Subcommand AddPlan(CLI::App& app) {
  auto args = std::make_shared<cli::TargetArgs>();
  auto scale = std::make_shared<cli::ScaleArgs>();
  auto* cmd = app.add_subcommand("plan", "Predict memory per rank and category, and communication per step, from a "
                                         "scenario (allocates nothing); with --nodes, how it scales to 1024 GPUs");
  cmd->add_option("target", args->target, "Suite or scenario: a file or a shipped name")->required();
  cmd->add_option("overrides", args->overrides, "key=value overrides, e.g. model=llama2-70b world_size=8");
  cmd->add_flag("--json", args->json, "JSON (bytes per category held and at peak, collectives per step) for scripts; "
                                         "(without the --nodes scaling table)");
  cmd->add_option("--nodes", scale->nodes, "Nodes of the cluster you plan for (marks its row; adds the scaling table)")
      ->check(cli::Positive());
  cmd->add_option("--gpus-per-node", scale->links.gpus_per_node, "GPUs per node (default 8)")->check(cli::Positive());
  cmd->add_option("--inter-node-gbps", scale->links.inter_node_gbps, "Network per GPU across nodes, Gb/s (default 400)")
      ->check(cli::Positive());
  cmd->add_option("--intra-node-gbps", scale->links.intra_node_gbps, "Link per GPU within a node, Gb/s (default 3600: NVLink 4)")
      ->check(cli::Positive());
  cmd->add_option("--achieved-tflops", scale->links.achieved_tflops, "FLOP/s a GPU sustains in a step (default 400)")
      ->check(cli::Positive());
  return {cmd, [args, scale] { return cli::PlanCommand(*args, *scale); }};
}

}  // namespace

static int RunShardbench(int argc, char** argv) {
  using namespace shardbench;
  CLI::App app{"shardbench: benchmark and regression harness for sharded fine-tuning"};
  app.set_version_flag("--version", VersionText(GetBuildInfo()));
  app.require_subcommand(1);
  const std::string self_exe = SelfExe(argv[0]);
  const std::vector<Subcommand> subcommands = {
      AddRun(app, self_exe),
      AddRank(app),
      AddInspect(app, "show", "Print the fully resolved scenario instances (matrix expanded)", cli::ShowCommand),
      {app.add_subcommand("models", "List the named model configs"), cli::ModelsCommand},
      {app.add_subcommand("list", "List the shipped suites and scenarios"), cli::ListCommand},
      AddPlan(app),
      AddCompare(app),
      AddMerge(app),
      AddMatrix(app, self_exe),
      AddExport(app),
      AddTrace(app),
      AddHistory(app),
      AddShrink(app, self_exe),
      AddBatches(app),
      AddConvertCheckpoint(app),
  };
  // CLI11 reads an unknown first word as a missing subcommand; say which word it was.
  std::string known;
  bool found = false;
  for (const Subcommand& s : subcommands) {
    if (!s.app->get_group().empty()) known += (known.empty() ? "" : ", ") + s.app->get_name();
    found |= argc > 1 && s.app->get_name() == argv[1];
  }
  if (argc > 1 && argv[1][0] != '-' && !found) {
    std::fprintf(stderr, "shardbench: unknown command '%s' (expected one of %s; see --help)\n", argv[1], known.c_str());
    return static_cast<int>(ExitCode::kBadInput);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kBadInput);
  }
  try {
    for (const Subcommand& s : subcommands) {
      if (!*s.app) continue;
      if (const CLI::Option* overrides = s.app->get_option_no_throw("overrides")) RefuseRepeatedOverrides(overrides->results(), "");
      return s.run();
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "shardbench: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the filesystem refused where no check of ours looked first: a file error like any
    // other (engine/common/error.h), not an internal one.
    std::fprintf(stderr, "shardbench: %s\n", e.what());
    return static_cast<int>(FileErrorCode(e.code().value()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardbench: internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::kInfra);
  }
  return 0;
}

int main(int argc, char** argv) {
  // Every scoped object of the command is gone by now (engine/common/fast_exit.h says why).
  shardbench::ExitWithoutStaticDestructors(RunShardbench(argc, argv));
}
