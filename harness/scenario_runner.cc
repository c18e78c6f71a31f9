#include "harness/scenario_runner.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "engine/comm/create_communicator.h"
#include "engine/common/error.h"
#include "engine/common/failpoints.h"
#include "engine/memory/device_memory.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/hf_weights.h"
#include "engine/profile/instruction_count.h"
#include "engine/profile/kernel_trace.h"
#include "engine/profile/matmul_peak.h"
#include "engine/profile/model_flops.h"
#include "engine/train/trainer.h"
#include "harness/checkpoint_harness.h"
#include "harness/frozen_dtype_check.h"
#include "harness/instruction_launch.h"
#include "harness/timing_controls.h"
#include "harness/memory_plan.h"
#include "harness/metric_table.h"
#include "harness/model_source.h"
#include "harness/rank_record.h"
#include "harness/rank_trace.h"
#include "harness/reference_parity.h"
#include "harness/resume_point.h"
#include "harness/run_assembly.h"
#include "harness/run_checks.h"
#include "harness/run_provenance.h"
#include "reporters/provenance.h"
#include "reporters/steady_state.h"
#include "harness/scenario/scenario_model.h"
#include "harness/scenario/scenario_parser.h"
#include "harness/engine_setup.h"

namespace shardbench {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The model's buffers, each storage once (buffers the engines never shard or free).
int64_t BufferBytes(model::LlamaForCausalLM& model) {
  std::set<const void*> seen;
  int64_t bytes = 0;
  for (const auto& b : model.named_buffers()) {
    const at::Tensor& t = *b.slot;
    if (t.defined() && t.has_storage() && seen.insert(t.storage().unsafeGetStorageImpl()).second) bytes += t.storage().nbytes();
  }
  return bytes;
}

// The tracking allocator's figures: overall peak, the breakdown at it, each category's peak.
void RecordTracked(RankRecord& r, const memory::MemoryStats& tracked) {
  r.tracked_peak = static_cast<double>(tracked.peak);
  r.tracked_at_peak.assign(tracked.at_peak.bytes.begin(), tracked.at_peak.bytes.end());
  r.tracked_peak_by.assign(tracked.by_category.peak.bytes.begin(), tracked.by_category.peak.bytes.end());
}

// One scenario instance on one rank, phase by phase (RunScenarioRank below reads them in
// order). What a phase leaves for the later ones is a member, declared in the order the phases
// make it (and torn down in reverse: the engine before the model, everything before the
// communicator).
class RankRun {
 public:
  RankRun(const Scenario& s, const comm::RankEnv& env, const RunnerOptions& options)
      : s_(s), env_(env), options_(options) {}

  void setup();                       // connect, build the model, the engine and its optimizer
  void train();                       // warmup steps, then the measured ones (a save where asked)
  void measure();                     // what this rank holds and measured, into its record
  void check_checkpoint();            // a fresh model and engine load what was saved (and resume)
  std::optional<RunResult> assemble();  // gather every rank's record; rank 0 builds the result

 private:
  std::vector<model::Batch> micro_batches(int64_t step);
  int64_t resume_after_restart();
  void save_checkpoint(int64_t steps_done);
  RankRecord measured_so_far() const;
  void start_measured_window();
  void record_step(int64_t step, const train::StepTimes& t);
  void record_device_memory(RankRecord& rec) const;
  RunFacts facts() const;
  std::vector<Check> checks(const std::optional<Check>& parity);

  const Scenario& s_;
  const comm::RankEnv& env_;
  const RunnerOptions& options_;
  // setup
  std::string started_at_;
  Clock::time_point t_start_;
  std::unique_ptr<comm::Communicator> comm_;
  at::Device device_{at::kCPU};
  BuiltModel built_;
  int64_t params_total_ = 0, params_trainable_ = 0, trainable_bytes_ = 0;
  double connect_s_ = 0, construct_s_ = 0, shard_s_ = 0, init_peak_ = 0, init_rss_peak_ = 0, init_s_ = 0, fingerprint_s_ = 0;
  std::unique_ptr<EngineUnderTest> engine_;
  Fingerprints before_, after_;  // the learning check's
  double first_batch_after_ = 0;  // and step 0's batch's loss once trained
  // train
  std::unique_ptr<train::Trainer> trainer_;
  std::unique_ptr<model::DataSource> data_;
  std::unique_ptr<CheckpointHarness> checkpoint_;
  std::unique_ptr<RankRecord> rec_;
  std::unique_ptr<profile::KernelTrace> kernel_trace_;
  std::unique_ptr<RankTrace> trace_;         // spans over the measured steps (always: the overlap metrics)
  std::unique_ptr<profile::InstructionWindow> instructions_;  // profile.instructions
  int64_t counted_steps_ = 0;                // steps inside the instruction window
  bool host_peak_reset_ = false;             // the kernel restarted VmHWM when the window opened
  int64_t resumed_from_ = 0;                 // steps an earlier attempt took (restarted job)
  int64_t stopped_after_ = 0;                // the loss diverged: training stopped after this many steps
  std::unique_ptr<RankRecord> earlier_;      // that attempt's record of them, at its save
  // check_checkpoint
  std::vector<Check> checkpoint_checks_;
};

void RankRun::setup() {
  if (env_.world_size != s_.world_size) {
    throw InputError("scenario '" + s_.name + "' asks for world_size " + std::to_string(s_.world_size) +
                     " but this job has " + std::to_string(env_.world_size) + " ranks (WORLD_SIZE)");
  }
  CheckFitsThisMachine(s_, std::max(1, env_.local_world_size));  // before anything is allocated
  memory::InstallTrackingAllocator();
  // A job's rank runs many instances in one process: each one's peaks start from here.
  memory::ResetPeaks();
  SetScenarioFailpoints(s_.failpoints);
  // Before any thread starts (the communicator's), so that they inherit this rank's cores.
  if (s_.timing.pin_cores) PinToRankCores(env_.local_rank, std::max(1, env_.local_world_size));
  started_at_ = NowIso8601Utc();
  t_start_ = Clock::now();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(s_.timeout_s * 1000));

  // Connect the ranks. A single CPU rank needs no communicator; on GPU the engines' NCCL
  // collectives run even alone (one GPU: the same kernels and copies, at world size 1).
  const auto t_connect = Clock::now();
  if (env_.world_size > 1 || s_.backend == Backend::kNccl) comm_ = comm::Connect(BackendName(s_.backend), env_, comm::CommOptions{timeout}, options_.store);
  connect_s_ = Since(t_connect);
  device_ = s_.device() == "cuda" ? at::Device(at::kCUDA, static_cast<int8_t>(env_.local_rank)) : at::Device(at::kCPU);
  if (device_.is_cuda()) {  // set either way: the process's default is not the scenario's
    at::globalContext().setAllowTF32CuBLAS(s_.mixed_precision.allow_tf32);
    at::globalContext().setAllowTF32CuDNN(s_.mixed_precision.allow_tf32);
  }

  // Build the model on every rank (named config, or an HF checkpoint directory): whole
  // (init=eager), or on the meta device for the engine to materialise shard by shard.
  const auto t_construct = Clock::now();
  built_ = BuildScenarioModel(s_, s_.train.seed, device_);
  model::LlamaForCausalLM& llama = *built_.model;
  construct_s_ = Since(t_construct) - built_.load->seconds;  // allocate + initialise
  params_total_ = model::CountParameters(llama, false);
  params_trainable_ = model::CountParameters(llama, true);
  for (auto& p : llama.named_parameters()) {
    if (p.slot->requires_grad()) trainable_bytes_ += p.slot->nbytes();
  }

  // The engine under test (reference, flat or per_param), and its optimizer before or after wrapping.
  const auto t_shard = Clock::now();
  const double load_before_shard = built_.load->seconds;
  engine_ = std::make_unique<EngineUnderTest>(s_, llama, comm_.get(), built_.materialize);
  shard_s_ = Since(t_shard) - (built_.load->seconds - load_before_shard);  // meta: reads counted as load
  // checkpoint.load_from: a SHARDED checkpoint over the built weights, part of init (counted in
  // init_time); a restarted job's own resume point loads over it later (resume_after_restart).
  if (!s_.checkpoint.load_from.empty()) LoadCheckpointAtInit(*engine_, s_.checkpoint.load_from, comm_.get());
  // Init's own peak (suites/catalog.yaml case 3): building, loading and sharding, before the harness's
  // fingerprints and the first step.
  init_peak_ = static_cast<double>(memory::Snapshot().peak);
  init_s_ = Since(t_start_);
  init_rss_peak_ = static_cast<double>(HostRssPeakBytes());
  // The learning check's fingerprints gather every parameter: harness work, kept out of init.
  const auto t_fingerprints = Clock::now();
  if (s_.checks.learning) before_ = engine_->fingerprints();
  fingerprint_s_ = Since(t_fingerprints);
}

// With A micro-batches of b samples, rank r takes samples [r*A*b, (r+1)*A*b) of each global
// batch, so every world size and accumulation count sees the same global batches.
std::vector<model::Batch> RankRun::micro_batches(int64_t step) {
  const int64_t b = s_.train.batch_size, accum = s_.train.grad_accumulation;
  std::vector<model::Batch> micro;
  for (int64_t m = 0; m < accum; ++m) {
    model::Batch batch = data_->batch(step, (env_.rank * accum + m) * b, b);
    batch.input_ids = batch.input_ids.to(device_);
    batch.labels = batch.labels.to(device_);
    micro.push_back(batch);
  }
  return micro;
}

void RankRun::train() {
  data_ = ScenarioData(s_, built_.model->config().vocab_size);
  const int64_t total = s_.total_steps();
  checkpoint_ = std::make_unique<CheckpointHarness>(s_, options_.checkpoint_dir, comm_.get());
  rec_ = std::make_unique<RankRecord>(total);
  rec_->init_peak_bytes = init_peak_;  // everything before step 1
  const int64_t first = resume_after_restart();
  train::TrainerOptions trainer_options = TrainerOptionsFor(s_);
  trainer_options.first_step = first;
  trainer_ = std::make_unique<train::Trainer>(*built_.model, engine_->optimizer(), comm_.get(), engine_->sync(),
                                              trainer_options);
  // Resumed past the warmup, the window opens at the first step this attempt takes.
  const int64_t window = std::max(first, s_.train.warmup_steps);
  if (s_.profile.instructions) instructions_ = std::make_unique<profile::InstructionWindow>(CallgrindDumpPrefix());
  for (int64_t step = first; step < total; ++step) {
    if (step == window) start_measured_window();
    if (step >= window) ++counted_steps_;
    std::vector<model::Batch> batches;
    {
      profile::ScopedSpan span("data", "data");
      batches = micro_batches(step);
    }
    const train::StepTimes t = trainer_->step(batches);
    record_step(step, t);
    if (s_.timing.calibrate) rec_->calibration_seconds[step] = TimeCalibrationKernel();  // outside the step's timer
    // Divergence ends the instance: the global loss is the same on every rank, so all stop
    // after this very step, with no collective left half-entered.
    if (!std::isfinite(t.loss)) {
      stopped_after_ = step + 1;
      KeepFirstSteps(*rec_, stopped_after_);
      break;
    }
    if (checkpoint_->saves_after(step + 1)) save_checkpoint(step + 1);
  }
  if (instructions_ && counted_steps_ > 0) {
    rec_->instructions_per_step = instructions_->stop() / static_cast<double>(counted_steps_);
  }
  if (trace_) trace_->finish();  // the checks after training are not the run's timeline
  if (!stopped_after_) checkpoint_->remember_final(*engine_);
  if (kernel_trace_ && kernel_trace_->dropped() > 0) {
    throw InfraError("kernel trace: CUPTI dropped " + std::to_string(kernel_trace_->dropped()) +
                     " kernel records (buffers full); the overlap figures would be wrong");
  }
  kernel_trace_.reset();
}

// A job torchrun restarted (TORCHELASTIC_RESTART_COUNT > 0) continues this instance from the
// checkpoint an earlier attempt saved, when every rank has its resume point for this very
// scenario and the checkpoint holds optimizer state; otherwise it starts at step 1. Returns the
// steps already taken. Collective.
int64_t RankRun::resume_after_restart() {
  if (env_.restart_count == 0 || !checkpoint_->enabled() || s_.checkpoint.type == CheckpointType::kAdapter) return 0;
  std::optional<ResumePoint> point = ReadResumePoint(options_.checkpoint_dir, env_.rank);
  const std::string resolved = YAML::Dump(ScenarioToYaml(s_));
  const bool usable = point && point->scenario == resolved && point->steps_done == checkpoint_->save_after() &&
                      point->record.size() == rec_->pack().size();
  // Every rank resumes, or none does.
  double usable_ranks = usable ? 1.0 : 0.0;
  if (comm_) {
    at::Tensor t = at::tensor({usable_ranks}, at::kDouble).to(comm_->device());
    comm_->all_reduce(t);
    usable_ranks = t.cpu().item<double>();
  }
  if (usable_ranks != env_.world_size) return 0;
  checkpoint_->resume_from(*engine_, point->save, point->digests);
  earlier_ = std::make_unique<RankRecord>(RankRecord::Unpack(point->record, s_.total_steps()));
  resumed_from_ = point->steps_done;
  CopyFirstSteps(*rec_, *earlier_, resumed_from_);  // the steps taken before: as measured then
  rec_->time_to_first_step = earlier_->time_to_first_step;
  if (env_.rank == 0) {
    std::printf("   resumed after step %lld from the %s checkpoint an earlier attempt saved (restart %d)\n",
                static_cast<long long>(resumed_from_), CheckpointTypeName(s_.checkpoint.type), env_.restart_count);
    std::fflush(stdout);
  }
  return resumed_from_;
}

// Between steps, outside their timers; then this rank's resume point beside it.
void RankRun::save_checkpoint(int64_t steps_done) {
  const RankRecord so_far = measured_so_far();  // before the save moves any peak
  if (instructions_) instructions_->pause();   // a save is not a step's cost
  checkpoint_->save(*engine_);
  if (instructions_) instructions_->resume();
  if (kernel_trace_) kernel_trace_->collect();  // the save's kernels belong to no step
  WriteResumePoint(options_.checkpoint_dir, env_.rank,
                   {YAML::Dump(ScenarioToYaml(s_)), steps_done, so_far.pack(), checkpoint_->measures(),
                    checkpoint_->digests_at_save()});
}

// This rank's record with the measured window's counts and peaks as they stand now.
RankRecord RankRun::measured_so_far() const {
  RankRecord r = *rec_;
  if (comm_) r.set_comm(comm_->stats());
  const memory::MemoryRecord mem = engine_->memory();
  r.engine_peak.assign(mem.peak.bytes.begin(), mem.peak.bytes.end());
  RecordTracked(r, memory::Snapshot());
  record_device_memory(r);
  return r;
}

// Counts and peaks cover the measured steps only.
void RankRun::start_measured_window() {
  if (comm_) comm_->reset_stats();
  engine_->reset_peaks();
  memory::ResetPeaks();
  // Training's host peak, not init's (init_host_rss_peak holds that one).
  host_peak_reset_ = ResetHostRssPeak();
  if (device_.is_cuda()) memory::ResetDevicePeaks(device_.index());
  if (s_.profile.kernel_trace) {
    kernel_trace_ = profile::StartKernelTrace();
    kernel_trace_->collect();  // the warmup's kernels still in flight
  }
  trace_ = std::make_unique<RankTrace>(s_.profile.trace);
  trace_->start();
  if (instructions_) instructions_->start();  // last: the window's own set-up is not counted
}

void RankRun::record_step(int64_t step, const train::StepTimes& t) {
  RankRecord& rec = *rec_;
  if (kernel_trace_) {  // after the step's timer: the flush is the trace's own cost
    const profile::OverlapSummary o = profile::SummarizeOverlap(kernel_trace_->collect());
    rec.kernel_comm_seconds[step] = 1e-9 * static_cast<double>(o.communication_ns);
    rec.kernel_exposed_seconds[step] = 1e-9 * static_cast<double>(o.exposed_ns);
    rec.kernel_compute_seconds[step] = 1e-9 * static_cast<double>(o.compute_ns);
  }
  // Communication on a host thread (Gloo) has spans on the rank's communication track; NCCL's
  // runs on the GPU, where kernel_* above measure it, so its span figures are not recorded.
  if (std::optional<profile::SpanOverlap> o = trace_ ? trace_->step_done() : std::nullopt; o && s_.backend != Backend::kNccl) {
    rec.span_comm_seconds[step] = 1e-9 * static_cast<double>(o->communication_ns);
    rec.span_exposed_seconds[step] = 1e-9 * static_cast<double>(o->exposed_ns);
    rec.span_idle_seconds[step] = 1e-9 * static_cast<double>(o->idle_ns);
  }
  if (step == 0) rec.time_to_first_step = Since(t_start_) - fingerprint_s_;
  rec.step_seconds[step] = t.seconds;
  rec.optimizer_seconds[step] = t.optimizer;
  rec.grad_sync_seconds[step] = t.grad_sync;
  rec.comm_wait_seconds[step] = t.comm_wait;
  rec.loss[step] = t.loss;
  rec.local_loss[step] = t.local_loss;
  if (options_.on_step && env_.rank == 0) {
    const int64_t tokens = s_.train.batch_size * s_.train.grad_accumulation * s_.train.seq_len * env_.world_size;
    options_.on_step({step + 1, s_.total_steps(), step < s_.train.warmup_steps, t.loss,
                      static_cast<double>(tokens) / t.seconds, HostRssPeakBytes()});
  }
}

void RankRun::measure() {
  RankRecord& rec = *rec_;
  // What this rank holds (exact, from the tensors) and what it measured.
  using memory::Category;
  const memory::MemoryRecord mem = engine_->memory();
  rec.init_seconds = init_s_;
  rec.connect_seconds = connect_s_;
  rec.construct_seconds = construct_s_;
  rec.load_seconds = built_.load->seconds;
  rec.shard_seconds = shard_s_;
  rec.engine_held.assign(mem.held.bytes.begin(), mem.held.bytes.end());
  rec.engine_peak.assign(mem.peak.bytes.begin(), mem.peak.bytes.end());
  for (size_t d = 0; d < kStorageDtypes.size(); ++d) {
    auto it = mem.params_by_dtype.find(kStorageDtypes[d]);
    rec.param_bytes_by_dtype[d] = it == mem.params_by_dtype.end() ? 0.0 : static_cast<double>(it->second);
  }
  // Training's host peak only where this rank's reset ran (not when training stopped in warmup).
  rec.rss_peak_bytes = host_peak_reset_ ? static_cast<double>(HostRssPeakBytes()) : std::nan("");
  rec.init_rss_peak_bytes = init_rss_peak_;
  rec.checkpoint_bytes_read = static_cast<double>(built_.load->bytes_read);
  rec.buffer_bytes = static_cast<double>(BufferBytes(*built_.model));
  if (comm_) rec.set_comm(comm_->stats());
  memory::MemoryStats tracked = memory::Snapshot();
  // A save reset the peaks around itself; a save during warmup precedes the measured window.
  if (checkpoint_->stats_before_save() && checkpoint_->save_after() > s_.train.warmup_steps) {
    tracked = memory::MaxPeaks(*checkpoint_->stats_before_save(), tracked);
  }
  RecordTracked(rec, tracked);
  record_device_memory(rec);
  // Resumed after a checkpoint saved inside the measured window: the earlier attempt's part of it.
  if (earlier_ && resumed_from_ > s_.train.warmup_steps) JoinEarlierWindow(rec, *earlier_);
  if (s_.checks.learning) {
    after_ = engine_->fingerprints();
    // Step 0's batch again, with the trained weights (after every figure above was read).
    first_batch_after_ = stopped_after_ ? std::nan("") : trainer_->evaluate(micro_batches(0));
  }
}

void RankRun::record_device_memory(RankRecord& rec) const {
  if (!device_.is_cuda()) return;
  if (const auto d = memory::ReadDeviceMemory(device_.index())) {
    rec.device_allocated_peak = static_cast<double>(d->allocated_peak);
    rec.device_reserved_peak = static_cast<double>(d->reserved_peak);
    rec.device_active_peak = static_cast<double>(d->active_peak);
    rec.device_alloc_retries = static_cast<double>(d->alloc_retries);
    rec.device_ooms = static_cast<double>(d->ooms);
  }
}

void RankRun::check_checkpoint() {
  if (stopped_after_) {  // nothing to check a checkpoint against: say so, in the checks asked for
    const std::string why = "not run: training stopped after step " + std::to_string(stopped_after_) +
                            " (the loss was not finite)";
    if (s_.checks.state_dict_roundtrip) checkpoint_checks_.push_back({"state_dict_roundtrip", false, why});
    if (s_.checks.resume) checkpoint_checks_.push_back({"resume", false, why});
    checkpoint_->finish();
    return;
  }
  checkpoint_checks_ = checkpoint_->run_checks(
      rec_->loss, {[&](uint64_t seed) { return BuildScenarioModel(s_, seed, device_); },
                   [&](int64_t step) { return micro_batches(step); }});
  checkpoint_->finish();
  const CheckpointMeasures& cm = checkpoint_->measures();
  rec_->checkpoint_save_seconds = cm.save_seconds;
  rec_->checkpoint_load_seconds = cm.load_seconds;
  rec_->checkpoint_bytes = cm.bytes_this_rank;
  rec_->checkpoint_bytes_total = cm.bytes_total;
  rec_->checkpoint_save_peak_bytes = cm.save_peak_bytes;
}

// Rank 0 also trains the reference for loss parity, after measuring, while the others wait.
std::optional<RunResult> RankRun::assemble() {
  if (trace_) trace_->write(comm_.get(), env_.rank, options_.trace_file);
  std::vector<RankRecord> all = GatherRankRecords(*rec_, comm_.get());
  std::optional<Check> parity;
  if (env_.rank == 0 && LossParityApplies(s_)) parity = LossParityCheck(s_, rec_->loss);
  if (comm_) comm_->barrier();  // nobody tears down the store while others still use it
  if (env_.rank != 0) return std::nullopt;

  RunFrame frame;
  frame.run_id = options_.run_id;
  frame.started_at = started_at_;
  frame.provenance = RunProvenance(s_, env_.world_size, device_);
  frame.facts = facts();
  frame.trainable_bytes = trainable_bytes_;
  frame.checks = checks(parity);
  if (resumed_from_ > 0) frame.resumed_from_step = resumed_from_;
  if (std::any_of(all.begin(), all.end(), [](const RankRecord& r) { return std::isnan(r.rss_peak_bytes); })) {
    frame.not_measured["host_rss_peak"] = "VmHWM was not restarted when warmup ended (the window never opened, or "
                                          "/proc/self/clear_refs refused): it would include init";
  }
  return AssembleRunResult(s_, all, std::move(frame));
}

// The run's facts beyond the records: parameter counts, model FLOPs and, on GPU, the device's peaks.
RunFacts RankRun::facts() const {
  RunFacts facts;
  facts.params_total = params_total_;
  facts.params_trainable = params_trainable_;
  // Model FLOPs per token from the shapes (engine/profile/model_flops.h): what the measured
  // tokens/s achieve is MFU's numerator; its denominator needs a device's peak.
  facts.flops_per_token =
      static_cast<double>(profile::ModelFlopsPerToken(ScenarioModelConfig(s_), s_.lora, s_.train.seq_len).per_token());
  if (device_.is_cuda()) {
    // The peak this device reaches in a bf16 matmul now, and the datasheet's (when known).
    facts.matmul_peak = profile::CalibrateMatmulPeak(device_, at::kBFloat16, 8192).best_flops_per_s;
    facts.datasheet_peak = profile::DatasheetBf16Peak(profile::CudaDeviceName(device_.index()));
  }
  return facts;
}

// The checks this run makes itself; AssembleRunResult adds `finite` and the threshold checks
// (harness/check_table.h orders them all).
std::vector<Check> RankRun::checks(const std::optional<Check>& parity) {
  std::vector<Check> out;
  if (s_.checks.learning) out.push_back(LearningCheck(rec_->loss[0], first_batch_after_, engine_->trainable(), before_, after_));
  if (s_.checks.frozen_dtype) out.push_back(FrozenDtypeCheck(*built_.model, built_.loaded));
  if (parity) out.push_back(*parity);
  out.insert(out.end(), checkpoint_checks_.begin(), checkpoint_checks_.end());
  return out;
}

}  // namespace

std::optional<RunResult> RunScenarioRank(const Scenario& s, const comm::RankEnv& env, const RunnerOptions& options) {
  RankRun run(s, env, options);
  run.setup();
  run.train();
  run.measure();
  run.check_checkpoint();
  return run.assemble();
}

}  // namespace shardbench
