// Failpoints: named switches that inject a known, real-world breakage so a suite can prove its
// checks catch it. Off unless named in SHARDBENCH_FAILPOINTS (comma-separated) or a scenario's
// `failpoints:` list. Every name is documented here and in README.md:
//
//   local_load_shift     LOCAL load shifts one unit's shard by one element (pytorch#102667:
//                        LOCAL_STATE_DICT loading wrong data with use_orig_params=True)
//   adapter_rank0_only   adapter export writes only rank 0's slice of each LoRA weight, zeros
//                        elsewhere (accelerate#4206: a resume loses (N-1)/N of the adapter)
//   optim_load_drop_step optimizer load ignores the `step` entries (accelerate#3971), so bias
//                        correction restarts
//   slow_step_5pct       every training step takes 5% (10%, 20%) longer: a known slowdown the
//   slow_step_10pct      nightly gate must detect (ci/gate-quality.sh measures how often, and
//   slow_step_20pct      whether the gate's reported minimum detectable effect predicted it)
//   straggler_rank1      rank 1 alone sleeps each step twice as long as it was busy (step time
//                        minus time blocked in collectives): its busy time triples, its peers
//                        wait for it, and straggler_ratio shows ~3 naming rank 1 (less on a
//                        host with fewer cores than ranks: see engine/train/trainer.cc)
//   rank1_fails          rank 1 stops with an infrastructure error in its second step (a rank
//                        lost mid-instance): the instance fails on every rank, the next runs
//   slow_all_gather      every Gloo all-gather waits 10 ms before it moves data, on the thread
//                        that runs it (a slow link, planted): prefetch hides it behind compute,
//                        so comm_overlap_ratio must rise with forward/backward_prefetch on
//   slow_optimizer_5pct  AdamW's step does deterministic CPU work (engine/common/planted_work.h)
//   slow_optimizer_10pct of 5% (10%, 20%) of the reference step (smoke at world size 2 on the
//   slow_optimizer_20pct CI VM); slow_collectives_5pct / 10pct / 20pct the same work spread over
//                        the reference step's collectives, on Gloo's thread before each moves
//                        data: CPU-bound regressions inside an engine's own path, which the
//                        instruction count and wall time both see (ci/gate-quality.sh)
//   rank1_lost_once      rank 1's process exits (137, as if killed) in its second step, in a
//                        job's first attempt only (TORCHELASTIC_RESTART_COUNT unset or 0): the
//                        job fails, and a torchrun restart resumes and finishes it
#pragma once

#include <string>
#include <vector>

namespace shardbench {

const std::vector<std::string>& KnownFailpoints();
// InputError naming `where` for an unknown name.
void ValidateFailpoints(const std::vector<std::string>& names, const std::string& where);
// Replaces the scenario-given set (the environment's set always applies too).
void SetScenarioFailpoints(const std::vector<std::string>& names);
bool FailpointActive(const std::string& name);

}  // namespace shardbench
