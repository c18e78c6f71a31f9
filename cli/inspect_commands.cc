#include "cli/inspect_commands.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "engine/model/llama_config.h"
#include "engine/profile/model_flops.h"
#include "harness/scenario/scenario_model.h"
#include "harness/memory_plan.h"
#include "harness/suite.h"
#include "harness/scenario/scenario_parser.h"

namespace shardbench::cli {

int ShowCommand(const TargetArgs& args) {
  std::string title;
  TargetSource source;
  const std::vector<Job> jobs = ResolveTarget(args.target, args.overrides, &title, &source);
  std::cout << "# " << source.kind << " '" << title << "' (" << source.path << "): " << jobs.size() << " instance"
            << (jobs.size() == 1 ? "" : "s") << ", "
            << (args.all ? "every field" : "the fields that differ from the defaults (--all: every field)") << "\n\n";
  for (const Job& job : jobs) {
    std::cout << "# " << job.scenario.name << "  (repetitions " << job.repetitions << ", expect " << job.expect
              << ")\n---\n" << ScenarioToYaml(job.scenario, !args.all) << "\n\n";
  }
  return 0;
}

namespace {

// Per step and rank: each collective's count and bytes, as the communicator will count them.
void PrintCommPerStep(const memory::CommPrediction& c) {
  std::printf("  comm per step and rank:");
  bool any = false;
  for (size_t i = 0; i < c.per_step.size(); ++i) {
    if (c.per_step[i].count == 0) continue;
    std::printf("%s %s %lld x, %lld bytes", any ? ";" : "", comm::CollectiveName(static_cast<comm::Collective>(i)),
                (long long)c.per_step[i].count, (long long)c.per_step[i].bytes);
    any = true;
  }
  std::printf("%s%s\n", any ? "" : " none (one rank)",
              c.exact ? "" : " (estimate: per_param adapter units nested in layers, several micro-batches)");
}

// From 1 to 1024 GPUs (per-rank batch fixed): memory per rank, wire bytes, and the roofline.
void PrintScaling(Scenario s, const ScaleArgs& scale) {
  const double gib = 1024.0 * 1024 * 1024;
  const int64_t tokens = s.train.batch_size * s.train.seq_len * s.train.grad_accumulation;
  const double flops = static_cast<double>(profile::ModelFlopsPerToken(ScenarioModelConfig(s), s.lora, s.train.seq_len).per_token()) * tokens;
  const int asked = scale.nodes > 0 ? scale.nodes * scale.links.gpus_per_node : 0;
  std::printf("  %6s %5s %10s %11s %9s %9s %9s %8s\n", "GPUs", "nodes", "mem GiB", "wire GiB/st", "comm s", "compute s",
              "exposed s", "hidden");
  for (int n = 1; n <= 1024; n *= 2) {
    s.world_size = n;
    const memory::CommPrediction c = PlanScenarioComm(s);
    const memory::Roofline r = memory::EstimateStep(c, n, flops, scale.links);
    const int nodes = (n + scale.links.gpus_per_node - 1) / scale.links.gpus_per_node;
    const double hidden = r.comm_seconds > 0 ? 1.0 - r.exposed_seconds / r.comm_seconds : 1.0;
    std::printf("  %6d %5d %10.2f %11.3f %9.4f %9.4f %9.4f %7.0f%%%s\n", n, nodes, PlanScenarioMemory(s, 0).total() / gib,
                c.wire_bytes(n) / gib, r.comm_seconds, r.compute_seconds, r.exposed_seconds, 100 * hidden,
                n == asked ? "  <- --nodes x --gpus-per-node" : "");
  }
}

}  // namespace

// `plan --json`: per instance, rank 0's predicted bytes (held and peak per category, the total)
// and each collective's count and bytes per step, for scripts.
int PlanJson(const TargetArgs& args) {
  nlohmann::json instances = nlohmann::json::array();
  for (const Job& job : ResolveTarget(args.target, args.overrides, nullptr)) {
    const auto p = PlanScenarioMemory(job.scenario, 0);
    nlohmann::json held = nlohmann::json::object(), peak = nlohmann::json::object();
    for (size_t i = 0; i < memory::kCategories; ++i) {
      held[memory::CategoryName(memory::CategoryAt(i))] = p.bytes.held.bytes[i];
      peak[memory::CategoryName(memory::CategoryAt(i))] = p.bytes.peak.bytes[i];
    }
    const memory::CommPrediction c = PlanScenarioComm(job.scenario);
    nlohmann::json comm = nlohmann::json::object();
    for (size_t i = 0; i < c.per_step.size(); ++i) {
      if (c.per_step[i].count == 0) continue;
      comm[comm::CollectiveName(static_cast<comm::Collective>(i))] = {{"count", c.per_step[i].count},
                                                                      {"bytes", c.per_step[i].bytes}};
    }
    nlohmann::json units = nlohmann::json::array();
    for (const auto& [path, params] : p.unit_params) units.push_back({{"unit", path}, {"params", params}});
    instances.push_back({{"name", job.scenario.name}, {"world_size", job.scenario.world_size}, {"rank", 0},
                         {"memory", {{"held", held}, {"peak", peak}, {"total", p.total()}, {"units", p.units}}},
                         {"units", units},
                         {"comm_per_step", comm}, {"comm_exact", c.exact},
                         {"wire_bytes_per_step", c.wire_bytes(job.scenario.world_size)}});
  }
  std::cout << nlohmann::json{{"instances", instances},
                              {"note", "bytes; activations are an estimate (engine/memory/memory_model.cc), the rest "
                                       "follows the engines' layouts"}}.dump(2)
            << "\n";
  return 0;
}

int PlanCommand(const TargetArgs& args, const ScaleArgs& scale) {
  if (args.json) return PlanJson(args);
  const double gib = 1024.0 * 1024 * 1024;
  const bool scaling = scale.nodes > 0;
  std::printf("%-64s %9s %9s %9s %9s %9s %9s\n", "instance (rank 0, GiB)", "params", "unsh.peak", "grads", "optim",
              "activ.*", "total");
  for (const Job& job : ResolveTarget(args.target, args.overrides, nullptr)) {
    using memory::Category;
    const auto p = PlanScenarioMemory(job.scenario, 0);
    const memory::CategoryBytes &held = p.bytes.held, &peak = p.bytes.peak;
    std::printf("%-64s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", job.scenario.name.c_str(),
                held[Category::kParamsSharded] / gib, peak[Category::kParamsUnsharded] / gib, held[Category::kGrads] / gib,
                held[Category::kOptimState] / gib, peak[Category::kActivations] / gib, p.total() / gib);
    PrintCommPerStep(PlanScenarioComm(job.scenario));
    if (scaling) PrintScaling(job.scenario, scale);
  }
  std::printf("* activations are an estimate (engine/memory/memory_model.cc); the rest follows the engines' layouts\n");
  if (scaling) {
    std::printf("roofline: ring collectives ((n-1)/n of each all-gather/reduce-scatter, 2(n-1)/n of each all-reduce) at "
                "%.0f Gb/s per GPU within a node, %.0f Gb/s across nodes; compute = model FLOPs per token x tokens per "
                "rank at %.0f TFLOP/s achieved; hidden = the part of comm the step's compute could overlap (an upper "
                "bound: an engine overlaps only what its prefetch allows)\n",
                scale.links.intra_node_gbps, scale.links.inter_node_gbps, scale.links.achieved_tflops);
  }
  return 0;
}

int ListCommand() {
  const auto rows = ListShipped();
  int kind = 0, name = 0;  // column widths: descriptions start in one column however long the names
  for (const auto& row : rows) {
    kind = std::max(kind, static_cast<int>(row[0].size()));
    name = std::max(name, static_cast<int>(row[1].size()));
  }
  for (const auto& row : rows) std::printf("%-*s  %-*s  %s\n", kind, row[0].c_str(), name, row[1].c_str(), row[2].c_str());
  return 0;
}

int ModelsCommand() {
  for (const auto& name : model::NamedLlamaConfigs()) {
    const auto c = model::NamedLlamaConfig(name);
    std::printf("%-11s %6.2fB params  hidden %lld  layers %lld  heads %lld/%lld kv  vocab %lld\n", name.c_str(),
                c.parameter_count() / 1e9, (long long)c.hidden_size, (long long)c.num_hidden_layers,
                (long long)c.num_attention_heads, (long long)c.num_key_value_heads, (long long)c.vocab_size);
  }
  return 0;
}

}  // namespace shardbench::cli
