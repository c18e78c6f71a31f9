// Checks shared by the rank-worker commands: each records a mismatch and the command exits 1.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <string>
#include <vector>

namespace shardbench::worker {

void Expect(bool ok, const std::string& what);
void ExpectEqual(const at::Tensor& got, const at::Tensor& want, const std::string& what);
int ExitCode();  // 0 if nothing mismatched, else 1
std::chrono::milliseconds TimeoutFromEnv(int default_ms);

// Commands (tests/ranks/worker_*.cc).
int Collectives();
int StallOnRank1();
int DieOnRank1();
int JoinOnly();
int DataParallelParity(bool lora);
int FlatParity(const std::string& policy, bool reshard_after_forward, int64_t micro_batches, double max_grad_norm);
int FlatOptimizerBeforeWrap(bool use_orig_params);
int FlatGradBytes(const std::string& policy);
int FlatUnshardedPeak(const std::string& policy);
int PerParamParity(const std::string& policy, bool reshard_after_forward, int64_t micro_batches, double max_grad_norm);
int PerParamCommBytes(const std::string& policy);
int PrefetchCheck(const std::string& engine);
int EvaluateCheck(const std::string& engine, bool reshard_after_forward);
int FrozenBf16Check(const std::string& engine);
int MetaInitCheck(const std::string& engine, const std::string& checkpoint_dir);
int ActivationCheckpointingCheck(const std::string& engine, bool lora, const std::string& policy);
int StateDictRoundtrip(const std::string& kind, const std::string& engine, bool lora, const std::string& dir);
int StateDictLoad(const std::vector<std::string>& args);
int ShardedReshard(const std::vector<std::string>& args);

}  // namespace shardbench::worker
