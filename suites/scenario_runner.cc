#include "suites/scenario_runner.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>

#include "engine/comm/create_communicator.h"
#include "engine/common/error.h"
#include "engine/model/hf_weights.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/train/data_parallel.h"
#include "engine/train/trainer.h"
#include "reporters/provenance.h"
#include "scenarios/scenario_parser.h"
#include "suites/rank_record.h"

namespace shardbench {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Order-independent fingerprint of a tensor's values: enough to tell "changed" from "not".
std::pair<double, double> Fingerprint(const at::Tensor& t) {
  at::Tensor d = t.detach().to(at::kDouble);
  return {d.sum().item<double>(), d.pow(2).sum().item<double>()};
}

int64_t TensorBytes(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) if (t.defined()) n += t.nbytes();
  return n;
}

}  // namespace

std::optional<RunResult> RunScenarioRank(const Scenario& s, const comm::RankEnv& env, const RunnerOptions& options) {
  if (env.world_size != s.world_size) {
    throw InputError("scenario '" + s.name + "' asks for world_size " + std::to_string(s.world_size) +
                     " but this job has " + std::to_string(env.world_size) + " ranks (WORLD_SIZE)");
  }
  const std::string started_at = NowIso8601Utc();
  const auto t_start = Clock::now();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(s.timeout_s * 1000));

  // 1. Connect the ranks (a single rank needs no communicator).
  std::unique_ptr<comm::Communicator> comm;
  if (env.world_size > 1) comm = comm::Connect(s.backend, env, comm::CommOptions{timeout});
  const at::Device device = s.device() == "cuda" ? at::Device(at::kCUDA, static_cast<int8_t>(env.local_rank))
                                                 : at::Device(at::kCPU);

  // 2. Build the model: every rank holds all of it (the unsharded reference).
  const auto t_construct = Clock::now();
  model::LoadReport load;
  auto llama = model::BuildLlamaFromSource(s.model, s.lora, s.train.seed, at::TensorOptions().device(device), &load);
  const double construct_s = Since(t_construct);

  // 3. Optimizer over the trainable parameters, in recipe-style groups.
  optim::AdamW optimizer(optim::MakeParamGroups(*llama, s.train.lr, s.train.weight_decay, s.train.no_decay_on_norms));
  train::AllReduceGradients all_reduce(*llama, comm.get());
  train::Trainer trainer(*llama, optimizer, comm.get(), &all_reduce);
  std::vector<std::pair<std::string, std::pair<double, double>>> before;
  for (auto& p : llama->named_parameters()) before.push_back({p.name, Fingerprint(*p.slot)});
  const double init_s = Since(t_start);

  // 4. Train: warmup steps first, then the measured ones. Rank r takes samples
  //    [r*b, (r+1)*b) of each global batch.
  model::SyntheticData data(s.train.seed, llama->config().vocab_size, s.train.seq_len);
  const int64_t b = s.train.batch_size, total = s.total_steps();
  RankRecord rec(total);
  double first_step_done_s = 0;
  for (int64_t step = 0; step < total; ++step) {
    if (step == s.train.warmup_steps && comm) comm->reset_stats();  // comm counts cover measured steps only
    model::Batch batch = data.batch(step, env.rank * b, b);
    batch.input_ids = batch.input_ids.to(device);
    batch.labels = batch.labels.to(device);
    const train::StepTimes t = trainer.step(batch);
    if (step == 0) first_step_done_s = Since(t_start);
    rec.step_seconds[step] = t.seconds;
    rec.optimizer_seconds[step] = t.optimizer;
    rec.grad_sync_seconds[step] = t.grad_sync;
    rec.loss[step] = t.loss;
    if (options.on_step && env.rank == 0) {
      options.on_step({step + 1, total, step < s.train.warmup_steps, t.loss,
                       static_cast<double>(batch.tokens() * env.world_size) / t.seconds, HostRssPeakBytes()});
    }
  }

  // 5. What this rank holds, exactly, and what it measured.
  std::vector<at::Tensor> params, grads;
  for (auto& p : llama->named_parameters()) {
    params.push_back(*p.slot);
    if (p.slot->grad().defined()) grads.push_back(p.slot->grad());
  }
  rec.init_seconds = init_s;
  rec.construct_seconds = construct_s;
  rec.time_to_first_step = first_step_done_s;
  rec.param_bytes = static_cast<double>(TensorBytes(params));
  rec.grad_bytes = static_cast<double>(TensorBytes(grads));
  rec.optim_state_bytes = static_cast<double>(optimizer.state_bytes());
  rec.rss_peak_bytes = static_cast<double>(HostRssPeakBytes());
  rec.checkpoint_bytes_read = static_cast<double>(load.bytes_read);
  if (comm) rec.set_comm(comm->stats());

  // 6. The learning check: trainable parameters moved, frozen ones did not.
  int64_t unchanged_trainable = 0, changed_frozen = 0;
  std::string first_bad;
  {
    c10::NoGradGuard no_grad;
    size_t i = 0;
    for (auto& p : llama->named_parameters()) {
      const bool changed = Fingerprint(*p.slot) != before[i++].second;
      if (p.slot->requires_grad() && !changed) {
        ++unchanged_trainable;
        if (first_bad.empty()) first_bad = "trainable '" + p.name + "' did not change";
      } else if (!p.slot->requires_grad() && changed) {
        ++changed_frozen;
        if (first_bad.empty()) first_bad = "frozen '" + p.name + "' changed";
      }
    }
  }
  rec.unchanged_trainable = static_cast<double>(unchanged_trainable);
  rec.changed_frozen = static_cast<double>(changed_frozen);

  // 7. Gather every rank's record on all ranks; rank 0 assembles the result.
  std::vector<RankRecord> all = GatherRankRecords(rec, comm.get());
  if (comm) comm->barrier();  // nobody tears down the store while others still use it
  if (env.rank != 0) return std::nullopt;

  RunResult r;
  r.run_id = options.run_id;
  r.started_at = started_at;
  r.provenance = CollectProvenance(env.world_size, s.backend);
  r.scenario = {{"name", s.name}, {"source", s.source}, {"config", YamlToJson(ScenarioToYaml(s))},
                {"overrides", s.overrides}, {"matrix", nlohmann::json::object()}};
  r.loss = rec.loss;
  const int64_t global_tokens = b * s.train.seq_len * env.world_size;
  r.metrics = BuildMetrics(all, s.train.warmup_steps, global_tokens, llama->named_parameters());
  r.memory = BuildMemory(all);
  const double first_loss = rec.loss.front(), last_loss = rec.loss.back();
  const bool loss_dropped = last_loss < first_loss;
  int64_t bad_trainable = 0, bad_frozen = 0;
  for (const auto& a : all) {
    bad_trainable += static_cast<int64_t>(a.unchanged_trainable);
    bad_frozen += static_cast<int64_t>(a.changed_frozen);
  }
  Check learning{"learning", loss_dropped && bad_trainable == 0 && bad_frozen == 0, ""};
  learning.detail = "loss " + std::to_string(first_loss) + " -> " + std::to_string(last_loss) +
                    (loss_dropped ? " (dropped)" : " (did not drop)") + "; trainable unchanged: " +
                    std::to_string(bad_trainable) + ", frozen changed: " + std::to_string(bad_frozen) +
                    (first_bad.empty() ? "" : " (rank 0: " + first_bad + ")");
  r.checks.push_back(learning);
  r.status = learning.passed ? "ok" : "failed";
  if (!learning.passed) r.message = "check 'learning' failed: " + learning.detail;
  return r;
}

}  // namespace shardbench
