#include "harness/scenario_runner.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

#include "engine/comm/create_communicator.h"
#include "engine/common/error.h"
#include "engine/memory/device_memory.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/hf_weights.h"
#include "engine/profile/kernel_trace.h"
#include "engine/profile/matmul_peak.h"
#include "engine/profile/model_flops.h"
#include "scenarios/scenario_model.h"
#include "engine/train/trainer.h"
#include "reporters/provenance.h"
#include "reporters/steady_state.h"
#include "scenarios/scenario_parser.h"
#include "harness/checkpoint_harness.h"
#include "harness/model_source.h"
#include "suites/engine_setup.h"
#include "harness/frozen_dtype_check.h"
#include "engine/common/failpoints.h"
#include "harness/memory_plan.h"
#include "harness/rank_record.h"
#include "harness/reference_parity.h"

namespace shardbench {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Trainable parameters must have moved and frozen ones must not have: the check that turns a
// silently broken setup (an optimizer holding orphaned parameters) red.
Check LearningCheck(const std::vector<double>& loss, const std::vector<std::pair<std::string, bool>>& trainable,
                    const std::vector<std::pair<std::string, Fingerprint>>& before,
                    const std::vector<std::pair<std::string, Fingerprint>>& after) {
  int64_t unchanged_trainable = 0, changed_frozen = 0;
  std::string example;
  for (size_t i = 0; i < trainable.size(); ++i) {
    const bool changed = before[i].second != after[i].second;
    if (trainable[i].second && !changed) {
      if (unchanged_trainable++ == 0) example = "trainable '" + trainable[i].first + "' did not change";
    } else if (!trainable[i].second && changed) {
      if (changed_frozen++ == 0 && example.empty()) example = "frozen '" + trainable[i].first + "' changed";
    }
  }
  const bool dropped = loss.back() < loss.front();
  Check c{"learning", dropped && unchanged_trainable == 0 && changed_frozen == 0, ""};
  c.detail = "loss " + std::to_string(loss.front()) + " -> " + std::to_string(loss.back()) +
             (dropped ? " (dropped)" : " (did not drop)") + "; trainable unchanged: " +
             std::to_string(unchanged_trainable) + ", frozen changed: " + std::to_string(changed_frozen) +
             (example.empty() ? "" : " (e.g. " + example + ")");
  return c;
}

}  // namespace

std::optional<RunResult> RunScenarioRank(const Scenario& s, const comm::RankEnv& env, const RunnerOptions& options) {
  if (env.world_size != s.world_size) {
    throw InputError("scenario '" + s.name + "' asks for world_size " + std::to_string(s.world_size) +
                     " but this job has " + std::to_string(env.world_size) + " ranks (WORLD_SIZE)");
  }
  memory::InstallTrackingAllocator();
  SetScenarioFailpoints(s.failpoints);
  const std::string started_at = NowIso8601Utc();
  const auto t_start = Clock::now();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(s.timeout_s * 1000));

  // 1. Connect the ranks. A single CPU rank needs no communicator; on GPU the engines' NCCL
  //    collectives run even alone (one GPU: the same kernels and copies, at world size 1).
  std::unique_ptr<comm::Communicator> comm;
  if (env.world_size > 1 || s.backend == "nccl") comm = comm::Connect(s.backend, env, comm::CommOptions{timeout});
  const at::Device device = s.device() == "cuda" ? at::Device(at::kCUDA, static_cast<int8_t>(env.local_rank))
                                                 : at::Device(at::kCPU);

  // 2. Build the model on every rank (named config, or an HF checkpoint directory): whole
  //    (init=eager), or on the meta device for the engine to materialise shard by shard.
  const auto t_construct = Clock::now();
  BuiltModel built = BuildScenarioModel(s, s.train.seed, device);
  std::unique_ptr<model::LlamaForCausalLM>& llama = built.model;
  const double construct_s = Since(t_construct) - built.load->seconds;  // allocate + initialise
  const int64_t params_total = model::CountParameters(*llama, false);
  const int64_t params_trainable = model::CountParameters(*llama, true);
  int64_t trainable_bytes = 0;
  for (auto& p : llama->named_parameters()) {
    if (p.slot->requires_grad()) trainable_bytes += p.slot->nbytes();
  }

  // 3. The engine under test (reference or flat), and its optimizer before or after wrapping.
  const auto t_shard = Clock::now();
  const double load_before_shard = built.load->seconds;
  EngineUnderTest engine(s, *llama, comm.get(), built.materialize);
  const double shard_s = Since(t_shard) - (built.load->seconds - load_before_shard);  // meta: reads counted as load
  // Init's own peak (catalog case 3): building, loading and sharding, before the harness's
  // fingerprints and the first step.
  const double init_peak = static_cast<double>(memory::Snapshot().peak);
  const double init_s = Since(t_start);
  // The learning check's fingerprints gather every parameter: harness work, kept out of init.
  std::vector<std::pair<std::string, Fingerprint>> before, after;
  const auto t_fingerprints = Clock::now();
  if (s.checks.learning) before = engine.fingerprints();
  const double fingerprint_s = Since(t_fingerprints);

  // 4. Train: warmup steps first, then the measured ones. With A micro-batches of b samples,
  //    rank r takes samples [r*A*b, (r+1)*A*b) of each global batch, so every world size and
  //    accumulation count sees the same global batches.
  train::Trainer trainer(*llama, engine.optimizer(), comm.get(), engine.sync(), TrainerOptionsFor(s));
  const std::unique_ptr<model::DataSource> data = ScenarioData(s, llama->config().vocab_size);
  const int64_t b = s.train.batch_size, accum = s.train.grad_accumulation, total = s.total_steps();
  auto batches = [&](int64_t step) {
    std::vector<model::Batch> micro;
    for (int64_t m = 0; m < accum; ++m) {
      model::Batch batch = data->batch(step, (env.rank * accum + m) * b, b);
      batch.input_ids = batch.input_ids.to(device);
      batch.labels = batch.labels.to(device);
      micro.push_back(batch);
    }
    return micro;
  };
  CheckpointHarness checkpoint(s, options.checkpoint_dir, comm.get());
  RankRecord rec(total);
  rec.init_peak_bytes = init_peak;  // everything before step 1
  std::unique_ptr<profile::KernelTrace> kernel_trace;
  for (int64_t step = 0; step < total; ++step) {
    if (step == s.train.warmup_steps) {  // counts and peaks cover measured steps only
      if (comm) comm->reset_stats();
      engine.reset_peaks();
      memory::ResetPeaks();
      if (device.is_cuda()) memory::ResetDevicePeaks(device.index());
      if (s.profile.kernel_trace) {
        kernel_trace = profile::StartKernelTrace();
        kernel_trace->collect();  // the warmup's kernels still in flight
      }
    }
    const train::StepTimes t = trainer.step(batches(step));
    if (kernel_trace) {  // after the step's timer: the flush is the trace's own cost
      const profile::OverlapSummary o = profile::SummarizeOverlap(kernel_trace->collect());
      rec.kernel_comm_seconds[step] = 1e-9 * static_cast<double>(o.communication_ns);
      rec.kernel_exposed_seconds[step] = 1e-9 * static_cast<double>(o.exposed_ns);
      rec.kernel_compute_seconds[step] = 1e-9 * static_cast<double>(o.compute_ns);
    }
    if (step == 0) rec.time_to_first_step = Since(t_start) - fingerprint_s;
    rec.step_seconds[step] = t.seconds;
    rec.optimizer_seconds[step] = t.optimizer;
    rec.grad_sync_seconds[step] = t.grad_sync;
    rec.comm_wait_seconds[step] = t.comm_wait;
    rec.loss[step] = t.loss;
    if (options.on_step && env.rank == 0) {
      options.on_step({step + 1, total, step < s.train.warmup_steps, t.loss,
                       static_cast<double>(b * accum * s.train.seq_len * env.world_size) / t.seconds,
                       HostRssPeakBytes()});
    }
    if (checkpoint.saves_after(step + 1)) {
      checkpoint.save(engine);  // between steps, outside their timers
      if (kernel_trace) kernel_trace->collect();  // the save's kernels belong to no step
    }
  }
  checkpoint.remember_final(engine);
  if (kernel_trace && kernel_trace->dropped() > 0) {
    throw InfraError("kernel trace: CUPTI dropped " + std::to_string(kernel_trace->dropped()) +
                " kernel records (buffers full); the overlap figures would be wrong");
  }
  kernel_trace.reset();

  // 5. What this rank holds (exact, from the tensors) and what it measured.
  const EngineMemory mem = engine.memory();
  rec.init_seconds = init_s;
  rec.construct_seconds = construct_s;
  rec.load_seconds = built.load->seconds;
  rec.shard_seconds = shard_s;
  rec.param_bytes = static_cast<double>(mem.params_sharded + mem.params_unsharded);
  rec.params_sharded_bytes = static_cast<double>(mem.params_sharded);
  rec.params_unsharded_peak_bytes = static_cast<double>(mem.params_unsharded_peak);
  rec.grad_bytes = static_cast<double>(mem.grads);
  rec.grads_unsharded_peak_bytes = static_cast<double>(mem.grads_unsharded_peak);
  rec.optim_state_bytes = static_cast<double>(mem.optim_state);
  for (size_t d = 0; d < kStorageDtypes.size(); ++d) {
    auto it = mem.params_by_dtype.find(kStorageDtypes[d]);
    rec.param_bytes_by_dtype[d] = it == mem.params_by_dtype.end() ? 0.0 : static_cast<double>(it->second);
  }
  rec.rss_peak_bytes = static_cast<double>(HostRssPeakBytes());
  rec.checkpoint_bytes_read = static_cast<double>(built.load->bytes_read);
  if (comm) rec.set_comm(comm->stats());
  memory::MemoryStats tracked = memory::Snapshot();
  // A save reset the peaks around itself; a save during warmup precedes the measured window.
  if (checkpoint.stats_before_save() && checkpoint.save_after() > s.train.warmup_steps) {
    tracked = memory::MaxPeaks(*checkpoint.stats_before_save(), tracked);
  }
  rec.tracked_peak = static_cast<double>(tracked.peak);
  rec.tracked_at_peak.assign(tracked.at_peak.begin(), tracked.at_peak.end());
  rec.tracked_peak_by.assign(tracked.peak_by.begin(), tracked.peak_by.end());
  if (device.is_cuda()) {
    if (const auto d = memory::ReadDeviceMemory(device.index())) {
      rec.device_allocated_peak = static_cast<double>(d->allocated_peak);
      rec.device_reserved_peak = static_cast<double>(d->reserved_peak);
      rec.device_active_peak = static_cast<double>(d->active_peak);
      rec.device_alloc_retries = static_cast<double>(d->alloc_retries);
      rec.device_ooms = static_cast<double>(d->ooms);
    }
  }
  if (s.checks.learning) after = engine.fingerprints();

  // Checkpoint checks: a fresh model and engine load what was saved (and resume from it).
  const std::vector<Check> checkpoint_checks =
      checkpoint.run_checks(rec.loss, {[&](uint64_t seed) { return BuildScenarioModel(s, seed, device); }, batches});
  checkpoint.finish();
  const CheckpointMeasures& cm = checkpoint.measures();
  rec.checkpoint_save_seconds = cm.save_seconds;
  rec.checkpoint_load_seconds = cm.load_seconds;
  rec.checkpoint_bytes = cm.bytes_this_rank;
  rec.checkpoint_bytes_total = cm.bytes_total;
  rec.checkpoint_save_peak_bytes = cm.save_peak_bytes;

  // 6. Gather every rank's record; rank 0 assembles the result (and trains the reference for
  //    loss parity, after measuring, while the others wait).
  std::vector<RankRecord> all = GatherRankRecords(rec, comm.get());
  std::optional<Check> parity;
  if (env.rank == 0 && LossParityApplies(s)) parity = LossParityCheck(s, rec.loss);
  if (comm) comm->barrier();  // nobody tears down the store while others still use it
  if (env.rank != 0) return std::nullopt;

  RunResult r;
  r.run_id = options.run_id;
  r.started_at = started_at;
  r.provenance = CollectProvenance(env.world_size, s.backend);
  r.scenario = {{"name", s.name}, {"source", s.source}, {"config", YamlToJson(ScenarioToYaml(s))},
                {"overrides", s.overrides}, {"matrix", nlohmann::json::object()}};
  r.loss = rec.loss;
  const int64_t global_tokens = b * accum * s.train.seq_len * env.world_size;
  // Where the step times settle, from the data; warmup auto samples the step-time metrics from
  // there (at most half the steps dropped), everything else keeps the nominal warmup's window.
  r.steady_state_step = SteadyStateStep(SlowestRankStepSeconds(all));
  r.measured_from_step = s.train.warmup_auto ? std::min(*r.steady_state_step, total / 2) : s.train.warmup_steps;
  for (const auto& a : all) {
    r.rank_step_seconds.push_back(a.step_seconds);
    r.rank_comm_wait_seconds.push_back(a.comm_wait_seconds);
  }
  r.metrics = BuildMetrics(all, s.train.warmup_steps, global_tokens, params_total, params_trainable, r.measured_from_step);
  // Model FLOPs (engine/profile/model_flops.h): per token from the shapes, and what the
  // measured tokens/s achieve (MFU's numerator; its denominator needs a device's peak).
  const double flops_per_token = static_cast<double>(profile::ModelFlopsPerToken(ScenarioModelConfig(s), s.lora, s.train.seq_len).per_token());
  r.metrics.push_back({"model_flops_per_token", "FLOPs", "lower", "exact", {flops_per_token}, {}});
  for (const auto& m : std::vector<Metric>(r.metrics)) {
    if (m.name != "tokens_per_s") continue;
    Metric achieved{"achieved_flops_per_s", "FLOP/s", "higher", "sampled", {}, {}};
    for (double t : m.samples) achieved.samples.push_back(t * flops_per_token);
    for (double t : m.per_rank) achieved.per_rank.push_back(t * flops_per_token);
    r.metrics.push_back(achieved);
    if (device.is_cuda()) {
      // MFU: the model FLOPs all ranks achieve over world_size times one device's peak, both
      // the peak this device reaches in a bf16 matmul now and the datasheet's (when known).
      const double peak = profile::CalibrateMatmulPeak(device, at::kBFloat16, 8192).best_flops_per_s;
      r.metrics.push_back({"matmul_peak_flops_per_s", "FLOP/s", "higher", "sampled", {peak}, {}});
      auto mfu_against = [&](const std::string& name, double device_peak) {
        Metric mfu{name, "ratio", "higher", "sampled", {}, {}};
        for (double a : achieved.samples) mfu.samples.push_back(a / (device_peak * env.world_size));
        r.metrics.push_back(mfu);
      };
      mfu_against("mfu", peak);
      if (auto datasheet = profile::DatasheetBf16Peak(profile::CudaDeviceName(device.index()))) mfu_against("mfu_datasheet", *datasheet);
    }
  }
  r.memory = BuildMemory(all);
  r.memory_model = PredictedVsMeasured(PlanScenarioMemory(s, 0), ToJson(r)["memory"][0]);
  if (s.checks.learning) r.checks.push_back(LearningCheck(rec.loss, engine.trainable(), before, after));
  if (s.checks.frozen_dtype) r.checks.push_back(FrozenDtypeCheck(*llama, built.loaded));
  if (parity) r.checks.push_back(*parity);
  r.checks.insert(r.checks.end(), checkpoint_checks.begin(), checkpoint_checks.end());
  // Gradient bytes a rank holds over the trainable bytes it owns (catalog case 1's measure).
  const double owned = static_cast<double>(trainable_bytes) / env.world_size;
  double worst = 0;
  if (owned > 0) {
    Metric blowup_metric{"grad_blowup", "ratio", "lower", "exact", {}, {}};
    for (const auto& a : all) {
      worst = std::max(worst, a.grad_bytes);
      blowup_metric.per_rank.push_back(a.grad_bytes / owned);
    }
    blowup_metric.samples = {worst / owned};
    r.metrics.push_back(blowup_metric);
  }
  if (s.checks.max_grad_blowup > 0) {
    const double blowup = owned > 0 ? worst / owned : 0.0;
    char detail[256];
    std::snprintf(detail, sizeof(detail),
                  "a rank holds %.0f gradient bytes for %.0f trainable bytes it owns: %.2fx (limit %.2fx)", worst, owned,
                  blowup, s.checks.max_grad_blowup);
    r.checks.push_back({"grad_memory", blowup <= s.checks.max_grad_blowup, detail});
  }
  r.status = "ok";
  for (const auto& c : r.checks) {
    if (!c.passed) {
      r.status = "failed";
      r.message += (r.message.empty() ? "" : "; ") + ("check '" + c.name + "' failed: " + c.detail);
    }
  }
  return r;
}

}  // namespace shardbench
