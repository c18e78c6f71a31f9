// What a peer engine's ranks measured (peers/torch_fsdp writes it: <rep_dir>/records.json), read
// into the same RankRecords our ranks gather, so that harness/run_assembly.h builds the peer's
// result with our metric table, memory section, memory model and checks. The peer writes only
// what it measured; every figure it leaves out is NaN here (not measured: its metric is listed
// under the result's `not_measured`, never written as zero). The file is ours on both sides: a
// malformed one is our bug (std::logic_error, "internal error"), not the user's input.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/profile/trace_events.h"
#include "harness/rank_record.h"
#include "reporters/run_result.h"

namespace shardbench {

inline constexpr const char* kPeerRecordsFormat = "shardbench-peer-records/1";

struct PeerRun {
  std::string started_at;
  // PyTorch refused the scenario (every rank learnt it): its own words; nothing trained.
  std::optional<std::string> refusal;
  int64_t params_total = 0, params_trainable = 0, trainable_bytes = 0;
  std::vector<Check> checks;                         // the checks the peer made (learning, checkpoint ones)
  std::vector<std::string> warnings;                 // PyTorch's warnings, first lines
  nlohmann::json versions = nlohmann::json::object();  // torch, cuda, nccl and provenance.peer as imported
  std::optional<double> matmul_peak;                 // GPU: the bf16 matmul peak the peer's device reached
  std::optional<std::string> gpu_name;               // GPU: the device's name (datasheet peak)
  std::map<std::string, std::string> not_measured;   // metric -> why, as the peer says
  std::map<std::string, std::string> sampled;        // exact metrics that vary launch to launch here -> why
  std::vector<RankRecord> ranks;
};

PeerRun ReadPeerRecords(const nlohmann::json& document, const std::string& file);

// A traced peer (profile.trace on Gloo): each rank's timeline (engine/profile/torch_profiler_trace.h)
// summarised step by step as our ranks summarise theirs (harness/rank_trace.h), into the
// records' span series: the k-th "step" span is step first_step + k.
void AddTraceSpans(std::vector<RankRecord>& ranks, const std::vector<profile::RankSpans>& timelines, int64_t first_step);

}  // namespace shardbench
