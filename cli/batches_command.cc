#include "cli/batches_command.h"

#include <ATen/ATen.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "harness/scenario/scenario_model.h"
#include "harness/scenario/scenario_parser.h"
#include "harness/suite.h"

namespace shardbench::cli {
namespace {

nlohmann::json Rows(const at::Tensor& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t i = 0; i < t.size(0); ++i) {
    const at::Tensor row = t[i].contiguous();
    rows.push_back(std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()));
  }
  return rows;
}

}  // namespace

// Far more steps than any run takes; checked before anything is computed.
constexpr int64_t kMaxBatchSteps = 1000000;

int BatchesCommand(const BatchesArgs& args) {
  const std::vector<Job> jobs = ResolveTarget(args.target, args.overrides, nullptr);
  if (jobs.size() != 1) {
    throw InputError("batches: '" + args.target + "' resolves to " + std::to_string(jobs.size()) +
                     " instances; name one (override the matrix axes, or pass a single scenario)");
  }
  if (args.steps < 1 || args.steps > kMaxBatchSteps) {
    throw InputError("batches: --steps must be from 1 to " + std::to_string(kMaxBatchSteps) + ", got " +
                     std::to_string(args.steps));
  }
  const Scenario& s = jobs[0].scenario;
  const auto data = ScenarioData(s, ScenarioModelConfig(s).vocab_size);
  const int64_t b = s.train.batch_size, accum = s.train.grad_accumulation;
  // Rank r's micro-batch m of step t is samples [(r*A + m)*b, (r*A + m + 1)*b) of the global batch.
  const nlohmann::json head = {{"scenario", s.name}, {"world_size", s.world_size}, {"batch_size", b},
                               {"grad_accumulation", accum}, {"seq_len", s.train.seq_len}, {"seed", s.train.seed},
                               {"data", {{"source", s.data.source}, {"path", s.data.path}, {"token_dtype", s.data.token_dtype}}}};
  // One step at a time: the whole document held ~60 KB a step (a large --steps ran out of memory).
  std::string text = head.dump();
  text.pop_back();  // its closing brace: "steps" follows
  std::cout << text << ",\"steps\":[";
  for (int64_t step = 0; step < args.steps; ++step) {
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < s.world_size; ++r) {
      nlohmann::json micro = nlohmann::json::array();
      for (int64_t m = 0; m < accum; ++m) {
        const model::Batch batch = data->batch(step, (r * accum + m) * b, b);
        micro.push_back({{"input_ids", Rows(batch.input_ids)}, {"labels", Rows(batch.labels)}});
      }
      ranks.push_back(micro);
    }
    std::cout << (step ? "," : "") << nlohmann::json{{"step", step}, {"ranks", ranks}}.dump();
  }
  std::cout << "]}\n";
  return 0;
}

}  // namespace shardbench::cli
