// A scenario: everything one benchmark instance needs, fully resolved (every default explicit
// here, where each field is declared). Plain data: the runner reads it, results embed it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/llama.h"
#include "engine/optim/adamw.h"
#include "engine/optim/lr_schedule.h"
#include "engine/shard/wrap_policy.h"
#include "harness/scenario/scenario_choices.h"

namespace shardbench {

inline constexpr int64_t kAutoWarmupSteps = 2;

struct TrainConfig {
  int64_t batch_size = 4;      // per-rank micro-batch (samples)
  int64_t seq_len = 64;        // tokens per sample
  int64_t grad_accumulation = 1;  // micro-batches of batch_size per optimizer step
  int64_t steps = 10;          // measured steps, after warmup
  int64_t warmup_steps = 2;    // run first, excluded from every sampled metric
  // `warmup_steps: auto`: warmup_steps is the nominal kAutoWarmupSteps (memory peaks, comm
  // counts and the kernel trace reset after it, as with a number), while the step-time metrics
  // start where the run's own step times settle (reporters/steady_state.h), recorded in the
  // result as measured_from_step.
  bool warmup_auto = false;
  double lr = 1e-3;
  double weight_decay = 0.0;
  bool no_decay_on_norms = true;  // norms (by name) in a no-weight-decay group
  double max_grad_norm = 0.0;     // > 0: clip gradients by global norm (across all shards)
  optim::LrScheduleKind lr_schedule = optim::LrScheduleKind::kConstant;  // constant | cosine (after lr_warmup_steps)
  int64_t lr_warmup_steps = 0;    // linear learning-rate warmup (not the measurement warmup)
  double min_lr_ratio = 0.0;      // cosine decays to lr * min_lr_ratio at the last step
  uint64_t seed = 1234;        // model init and data
};

// FSDP options (engine: flat or per_param; use_orig_params is flat-only).
struct ShardingConfig {
  bool use_orig_params = true;             // FSDP1's default for fine-tuning since torch 2.x
  shard::WrapPolicyKind wrap_policy = shard::WrapPolicyKind::kTransformerBlock;  // transformer_block | lora_separate | peft | size | none
  int64_t min_params = 100000000;          // wrap_policy=size: params a unit needs (FSDP's 1e8)
  bool reshard_after_forward = true;       // false: SHARD_GRAD_OP
  // flat and per_param: all-gather the next unit (forward order recorded on the first
  // iteration; reversed in backward) while this one computes.
  bool forward_prefetch = false;
  bool backward_prefetch = false;
};

// FSDP MixedPrecision (engines flat and per_param): params gathered and used in param_dtype,
// gradients reduced in reduce_dtype; sharded master params and optimizer state stay fp32.
struct MixedPrecisionConfig {
  c10::ScalarType param_dtype = c10::ScalarType::Float;   // fp32 (no cast) | bf16 | fp16
  c10::ScalarType reduce_dtype = c10::ScalarType::Float;  // fp32 | bf16 | fp16
  // fp32 matmuls and convolutions on a GPU in TF32 (torch.backends.cuda.matmul.allow_tf32 and
  // cudnn's): the fp32 baseline at tensor-core speed, ~10 mantissa bits. No effect on a CPU.
  bool allow_tf32 = false;
};

struct OptimizerConfig {
  // after_wrap: built from the wrapped model's parameters (the documented way).
  // before_wrap: built from the original parameters, then the model is wrapped; fine with
  // use_orig_params=true, silently trains nothing with use_orig_params=false.
  OptimizerBuild build = OptimizerBuild::kAfterWrap;
  // AdamW implementation: for_loop | foreach | fused (torch's three; see engine/optim/adamw.h).
  optim::AdamWImpl impl = optim::AdamWImpl::kForLoop;
};

// Limits past which a value is a typo, not a job: 65,536 ranks (torchtitan's largest published
// runs are far below), a week per collective and launch.
inline constexpr int kMaxWorldSize = 65536;
inline constexpr double kMaxTimeoutS = 7 * 24 * 3600.0;

// A checkpoint saved during the run (engine/checkpoint/state_dict.h for the kinds).
struct CheckpointConfig {
  CheckpointType type = CheckpointType::kNone;  // none | full | sharded | local | adapter
  int64_t save_step = 0;      // save after this many steps (warmup included); 0: after the last
  bool keep = false;          // keep it in the run's output directory (checkpoint/); else removed
  // Start from this SHARDED checkpoint (parameters and optimizer state), loaded at init: our
  // engines read shardbench's format, the peers torch.distributed.checkpoint's;
  // `shardbench convert-checkpoint` converts between them. Empty: the scenario's own weights.
  std::string load_from;
};

struct ChecksConfig {
  // Loss per step against the unsharded reference trained in one process on the global batch
  // (same seed, fp32), relative tolerance. Skipped for the reference engine on one rank.
  bool loss_parity = true;
  double loss_rtol = 1e-5;
  // Steps the tolerance applies to. fp32 rounding (the order of gradient sums differs) grows
  // through training dynamics, so parity is judged on the first steps; the detail also reports
  // the largest difference over the whole run.
  int64_t loss_parity_steps = 8;
  bool learning = true;  // loss dropped, every trainable param changed, no frozen one did
  // grad_memory: gradient bytes a rank holds over the trainable bytes it owns (trainable bytes
  // / world size) must not exceed this. 0 = off. Frozen params flattened with trainable ones
  // (FSDP1 use_orig_params) push it far above 1.
  double max_grad_blowup = 0.0;
  // Every frozen parameter is stored in the dtype it was loaded in (model_dtype), not wider:
  // the engine's held bytes by dtype are compared with what the loaded dtypes give.
  bool frozen_dtype = false;
  // Save -> fresh model and engine -> load -> every rank's parameters and optimizer state equal
  // bit for bit to what was saved; missing/unexpected keys counted. Needs checkpoint.type.
  bool state_dict_roundtrip = false;
  // The run is repeated from the checkpoint: a fresh model loads it and trains the remaining
  // steps; losses and final parameters must equal the uninterrupted run's exactly. Needs a
  // checkpoint with optimizer state saved before the last step (checkpoint.save_step).
  bool resume = false;
};

// The token batches (engine/model/data_source.h: sample i of step s from (seed, s, i) alone).
struct DataConfig {
  DataSource source = DataSource::kSynthetic;  // synthetic (a learnable bigram pattern) | tokens (a token file)
  std::string path;                  // tokens: flat binary token ids, nanoGPT/Megatron style
  std::string token_dtype = "uint16";  // uint16 | uint32, little-endian
};

// The peer implementation (engine torch_fsdp1 | torch_fsdp2 | accelerate; peers/torch_fsdp).
struct PeerConfig {
  // The Python whose torch, transformers and peft run the peer: a path, "project" (the project's
  // .venv), or an environment name made by scripts/setup-peer-env.sh ("torch-2.10.0"); "" =
  // $SHARDBENCH_PYTHON, else the project's .venv. A matrix over several compares versions.
  std::string python;
  // An environment named by what it holds, canonical "torch=2.10.0,peft=0.17.1" (harness/peer_env.h):
  // built from the wheelhouse on first use; the run is refused unless the peer imported exactly
  // these. Excludes `python`.
  std::string env;
};

// Hugging Face accelerate as the engine (engine accelerate; peers/torch_fsdp/recipes.py): its
// Accelerator with a FullyShardedDataParallelPlugin of this FSDP version, built from the
// scenario's sharding, mixed precision, checkpoint and activation checkpointing fields.
struct AccelerateConfig {
  int fsdp_version = 1;  // 1: FullyShardedDataParallel | 2: fully_shard
};

// Optional instrumentation that costs time of its own.
struct ProfileConfig {
  // Record every GPU kernel with CUPTI over the measured steps (a device synchronisation and a
  // buffer flush after each step, outside its timer): metrics kernel_comm_time,
  // kernel_exposed_comm_time, kernel_compute_time, kernel_overlap_ratio. Needs backend nccl.
  bool kernel_trace = false;
  // Write the ranks' timelines over the measured steps as one Trace Event Format file
  // (<repetition>/trace.json: Perfetto UI, chrome://tracing), with every rank's host memory by
  // category as counter tracks. The overlap metrics (comm_exposed_time, comm_overlap_ratio,
  // rank_idle_time) are measured with or without it. `shardbench run --trace` sets it.
  bool trace = false;
  // Count the instructions every rank executes over the measured steps, under valgrind's
  // callgrind (engine/profile/instruction_count.h): metric instructions_per_step, a cost the
  // machine's load does not move. Each rank runs tens of times slower and starts in ~20 s more
  // (valgrind reads LibTorch's symbols): meant for a tiny instance with a few measured steps.
  bool instructions = false;
};

// How the wall-time figures are taken on a shared machine (README "Gate quality" measured what
// each is worth on the 2-core CI VM).
struct TimingConfig {
  // Each rank runs on its own share of this machine's cores (local_world_size ranks split the
  // cores the process may use; threads the rank starts later inherit it): no migrations, no
  // two ranks' threads on one core while another idles. No effect with one rank. Peers pin the
  // same way (peers/torch_fsdp/peer.py).
  bool pin_cores = false;
  // After every step, outside its timer, a fixed CPU kernel (engine/common/planted_work.h's
  // chain, ~0.3 ms) is timed: metric step_time_calibrated divides each step by it, cancelling
  // the machine's speed at that moment (frequency, a neighbour's load on the host).
  bool calibrate = false;
};

// Reshapes a named config (0 keeps the named config's value): what `shardbench shrink` writes
// to make a smaller reproducer. Not allowed with a checkpoint directory, whose weights fix the
// shapes.
struct ModelShape {
  int64_t num_hidden_layers = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t vocab_size = 0;
  bool any() const {
    return num_hidden_layers || hidden_size || intermediate_size || num_attention_heads || num_key_value_heads || vocab_size;
  }
};

struct Scenario {
  std::string name = "unnamed";
  std::string source;          // the file it came from ("" for built-ins)
  // A named config (tiny, 125m, 1b, llama2-7b, llama3-8b, llama2-70b) or a Hugging Face
  // checkpoint directory (config.json + model.safetensors[.index.json]).
  std::string model = "tiny";
  ModelShape model_shape;
  model::LoraConfig lora;      // enabled=false: full fine-tune
  // reference (unsharded data parallel, the baseline) | flat (FSDP1) | per_param (FSDP2) |
  // torch_fsdp1 | torch_fsdp2 (PyTorch's own, through the Python peer: peers/torch_fsdp) |
  // accelerate (Hugging Face accelerate's FSDP plugin, the same peer: accelerate.fsdp_version)
  Engine engine = Engine::kReference;
  ShardingConfig sharding;
  MixedPrecisionConfig mixed_precision;
  // The dtype the weights are loaded in (Hugging Face's torch_dtype): auto (each checkpoint
  // tensor's own dtype; fp32 for a named config, whose init computes fp32) | fp32 | bf16 | fp16.
  // Trainable parameters are then stored as fp32 masters; frozen ones keep this dtype.
  std::optional<c10::ScalarType> model_dtype;  // nullopt: auto
  // Which parameters become fp32: trainable (accelerate since #3848) | all (accelerate's FSDP2
  // before it, which also upcast the frozen base weights: accelerate#3844).
  Upcast upcast = Upcast::kTrainable;
  // Recompute each decoder layer's forward in backward instead of keeping its activations
  // (applied to the layer inside its sharding unit, as FSDP(checkpoint_wrapper(layer))).
  bool activation_checkpointing = false;
  // eager: every rank builds and initialises (or loads) the whole model, then shards it.
  // meta: built on the meta device; each rank materialises only its shard (init or checkpoint).
  Init init = Init::kEager;
  OptimizerConfig optimizer;
  TrainConfig train;
  DataConfig data;
  CheckpointConfig checkpoint;
  ChecksConfig checks;
  ProfileConfig profile;
  TimingConfig timing;
  PeerConfig peer;
  AccelerateConfig accelerate;
  // Known breakages to inject (engine/common/failpoints.h); empty in any honest run.
  std::vector<std::string> failpoints;
  int world_size = 1;  // at most kMaxWorldSize
  Backend backend = Backend::kGloo;  // gloo (CPU tensors) | nccl (one GPU per rank)
  double timeout_s = 300.0;          // rendezvous, each collective, and the whole launch; at most kMaxTimeoutS
  std::vector<std::string> overrides;  // key=value applied, in order (provenance)
  // For an instance of a matrix: the base name and this instance's axis values, in axis order
  // (key -> value as written). `name` is then "base[leaf=value,...]".
  std::string base_name;
  std::vector<std::pair<std::string, std::string>> matrix;

  std::string device() const { return backend == Backend::kNccl ? "cuda" : "cpu"; }
  int64_t total_steps() const { return train.warmup_steps + train.steps; }
};

}  // namespace shardbench
