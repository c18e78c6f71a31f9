#include "harness/scenario/peer_scenario.h"

#include "engine/common/error.h"
#include "harness/scenario/engine_registry.h"

namespace shardbench {
namespace {

// What torchtune 0.6.1's distributed LoRA / full fine-tune recipes do not do (recipes/
// lora_finetune_distributed.py): they shard every `layers.<i>` then the root, train in the
// model's dtype, build the optimizer over the sharded and loaded model, and save a full state
// dict gathered to rank 0.
template <typename Refuse>
void ValidateTorchtune(const Scenario& s, Refuse&& refuse) {
  if (s.sharding.wrap_policy != shard::WrapPolicyKind::kTransformerBlock) {
    refuse("sharding.wrap_policy", "torchtune's shard_model shards the modules its get_shard_conditions names "
                                   "(each `layers.<i>`, then the root): wrap_policy=transformer_block");
  }
  if (s.mixed_precision.param_dtype != c10::ScalarType::Float || s.mixed_precision.reduce_dtype != c10::ScalarType::Float) {
    refuse("mixed_precision", "torchtune trains in the model's dtype (model_dtype) and sets no "
                                           "MixedPrecisionPolicy");
  }
  if (s.optimizer.build == OptimizerBuild::kBeforeWrap) {
    refuse("optimizer.build=before_wrap", "torchtune's recipes build the optimizer over the sharded, loaded model");
  }
  if (s.sharding.forward_prefetch) refuse("sharding.forward_prefetch=true", "torchtune's shard_model sets none");
  if (s.checkpoint.type != CheckpointType::kNone && s.checkpoint.type != CheckpointType::kFull) {
    refuse("checkpoint.type", "torchtune's distributed recipes save a full state dict gathered to rank 0 "
                              "(gather_cpu_state_dict, get_full_optimizer_state_dict): checkpoint.type=full");
  }
  if (!s.checkpoint.load_from.empty()) {
    refuse("checkpoint.load_from", "torchtune resumes from its own full checkpoints, not from a DCP directory");
  }
}

}  // namespace

void ValidatePeerScenario(const Scenario& s, const std::string& src) {
  const bool accelerate = s.engine == Engine::kAccelerate, torchtune = s.engine == Engine::kTorchtune;
  // fully_shard's semantics: torch_fsdp2, accelerate's FSDP2 plugin, torchtune's shard_model.
  const bool per_parameter =
      s.engine == Engine::kTorchFsdp2 || torchtune || (accelerate && s.accelerate.fsdp_version == 2);
  const std::string stack = accelerate ? " (accelerate's FSDP plugin, version " + std::to_string(s.accelerate.fsdp_version) + ", "
                            : torchtune ? std::string(" (torchtune's FSDP2 utilities, ")
                                        : std::string(" (PyTorch's FSDP, ");
  const std::string who = src + ": engine=" + EngineName(s.engine) + stack + "peers/torch_fsdp): ";
  auto refuse = [&](const std::string& field, const std::string& why) {
    throw InputError(who + field + " is not mapped onto the peer: " + why + " (peers/README.md lists what is)");
  };
  if (s.checkpoint.type == CheckpointType::kLocal && per_parameter) {
    refuse("checkpoint.type=local", "fully_shard (FSDP2) has no local state dict: its state dict is DTensor shards "
                                    "already (use sharded); FSDP1's LOCAL_STATE_DICT is mapped on torch_fsdp1");
  }
  if (!s.failpoints.empty()) refuse("failpoints", "they inject faults into shardbench's own engines");
  if (s.train.warmup_auto) refuse("train.warmup_steps=auto", "the peer reads a number of warmup steps");
  if (s.profile.kernel_trace) refuse("profile.kernel_trace", "use the torch profiler on the peer side");
  if (s.profile.instructions) refuse("profile.instructions", "a Python interpreter under valgrind counts itself");
  if (s.timing.calibrate) refuse("timing.calibrate", "the calibration kernel runs in our ranks only");
  if (per_parameter && !s.sharding.use_orig_params) {
    throw InputError(who + "sharding.use_orig_params=false is an FSDP1 option; fully_shard always keeps each "
                     "parameter as its own DTensor");
  }
  if (s.engine == Engine::kTorchFsdp2 && s.sharding.wrap_policy == shard::WrapPolicyKind::kSize) {
    refuse("sharding.wrap_policy=size", "fully_shard has no auto-wrap policy; use transformer_block, lora_separate, peft or none");
  }
  if (!s.peer.env.empty() && !s.peer.python.empty()) {
    throw InputError(who + "peer.env and peer.python both name the peer's Python: keep one");
  }
  if (torchtune && !s.peer.env.empty()) {
    refuse("peer.env", "engine torchtune runs in its own environment (.venv-peer-torchtune, requirements-torchtune.txt)");
  }
  if (torchtune) ValidateTorchtune(s, refuse);
  if (!accelerate) return;
  if (s.sharding.wrap_policy == shard::WrapPolicyKind::kLoraSeparate) {
    refuse("sharding.wrap_policy=lora_separate", "accelerate's plugin takes transformer_based_wrap, size_based_wrap or "
                                                 "a policy; PEFT's own policy (adapters separately) is wrap_policy=peft");
  }
  if (s.checkpoint.type == CheckpointType::kAdapter) {
    refuse("checkpoint.type=adapter", "accelerate's save_state writes the model by the plugin's state_dict_type "
                                      "(full, sharded, local)");
  }
  if (!s.checkpoint.load_from.empty()) {
    refuse("checkpoint.load_from", "accelerate starts from its own save_state directories, not from a DCP checkpoint");
  }
  if (s.init == Init::kMeta && !per_parameter) {
    refuse("init=meta", "it is accelerate's cpu_ram_efficient_loading, mapped on accelerate.fsdp_version=2; FSDP1's "
                        "needs sync_module_states, which accelerate refuses on CPU");
  }
  if (per_parameter && s.optimizer.build == OptimizerBuild::kAfterWrap) {
    refuse("optimizer.build=after_wrap", "accelerate's FSDP2 prepares a model only together with its optimizer "
                                         "(accelerator.prepare(model, optimizer)); set optimizer.build=before_wrap");
  }
  if (per_parameter && s.sharding.forward_prefetch) {
    refuse("sharding.forward_prefetch=true", "accelerate's FSDP2 plugin sets no explicit forward prefetch");
  }
  if (!per_parameter && s.checkpoint.type == CheckpointType::kFull && s.backend == Backend::kGloo) {
    refuse("checkpoint.type=full", "accelerate's save_state gathers FSDP1's full state dict with offload_to_cpu "
                                   "(num_processes > 1), which crashes torch 2.11 on CPU parameters (SIGSEGV in "
                                   "_state_dict_utils.py param_hook); use sharded, or run on a GPU");
  }
}

}  // namespace shardbench
