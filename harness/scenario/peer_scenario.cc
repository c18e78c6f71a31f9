#include "harness/scenario/peer_scenario.h"

#include "engine/common/error.h"
#include "harness/scenario/engine_registry.h"

namespace shardbench {

void ValidatePeerScenario(const Scenario& s, const std::string& src) {
  const std::string who = src + ": engine=" + EngineName(s.engine) + " (PyTorch's FSDP, peers/torch_fsdp): ";
  auto refuse = [&](const std::string& field, const std::string& why) {
    throw InputError(who + field + " is not mapped onto the peer: " + why + " (peers/README.md lists what is)");
  };
  if (s.checkpoint.type == CheckpointType::kLocal && s.engine == Engine::kTorchFsdp2) {
    refuse("checkpoint.type=local", "fully_shard (FSDP2) has no local state dict: its state dict is DTensor shards "
                                    "already (use sharded); FSDP1's LOCAL_STATE_DICT is mapped on torch_fsdp1");
  }
  if (!s.failpoints.empty()) refuse("failpoints", "they inject faults into shardbench's own engines");
  if (s.train.warmup_auto) refuse("train.warmup_steps=auto", "the peer reads a number of warmup steps");
  if (s.profile.kernel_trace) refuse("profile.kernel_trace", "use the torch profiler on the peer side");
  if (s.engine == Engine::kTorchFsdp2 && !s.sharding.use_orig_params) {
    throw InputError(who + "sharding.use_orig_params=false is an FSDP1 option; fully_shard always keeps each "
                     "parameter as its own DTensor");
  }
  if (s.engine == Engine::kTorchFsdp2 && s.sharding.wrap_policy == shard::WrapPolicyKind::kSize) {
    refuse("sharding.wrap_policy=size", "fully_shard has no auto-wrap policy; use transformer_block, lora_separate, peft or none");
  }
}

}  // namespace shardbench
