#include "cli/inspect_commands.h"

#include <cstdio>
#include <iostream>

#include "engine/model/llama_config.h"
#include "harness/memory_plan.h"
#include "harness/suite.h"
#include "harness/scenario/scenario_parser.h"

namespace shardbench::cli {

int ShowCommand(const TargetArgs& args) {
  for (const Job& job : ResolveTarget(args.target, args.overrides, nullptr)) {
    std::cout << "# " << job.scenario.name << "  (repetitions " << job.repetitions << ", expect " << job.expect
              << ")\n---\n" << ScenarioToYaml(job.scenario) << "\n\n";
  }
  return 0;
}

int PlanCommand(const TargetArgs& args) {
  const double gib = 1024.0 * 1024 * 1024;
  std::printf("%-64s %9s %9s %9s %9s %9s %9s\n", "instance (rank 0, GiB)", "params", "unsh.peak", "grads", "optim",
              "activ.*", "total");
  for (const Job& job : ResolveTarget(args.target, args.overrides, nullptr)) {
    using memory::Category;
    const auto p = PlanScenarioMemory(job.scenario, 0);
    const memory::CategoryBytes &held = p.bytes.held, &peak = p.bytes.peak;
    std::printf("%-64s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", job.scenario.name.c_str(),
                held[Category::kParamsSharded] / gib, peak[Category::kParamsUnsharded] / gib, held[Category::kGrads] / gib,
                held[Category::kOptimState] / gib, peak[Category::kActivations] / gib, p.total() / gib);
  }
  std::printf("* activations are an estimate (engine/memory/memory_model.cc); the rest follows the engines' layouts\n");
  return 0;
}

int ListCommand() {
  for (const auto& row : ListShipped()) std::printf("%-9s %-18s %s\n", row[0].c_str(), row[1].c_str(), row[2].c_str());
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
