// The checkpoint part of a scenario run: saving at checkpoint.save_step (timed, its bytes and
// peak memory measured, kept out of the training figures), then the state_dict_roundtrip and
// resume checks, each on a fresh model and engine built the way the run built its own.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/param_pieces.h"
#include "engine/checkpoint/state_dict.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "reporters/run_result.h"
#include "harness/scenario/scenario.h"
#include "harness/engine_setup.h"
#include "harness/model_source.h"

namespace shardbench {

// What this rank measured (-1: not measured in this run).
struct CheckpointMeasures {
  double save_seconds = -1, load_seconds = -1;
  double bytes_this_rank = -1, bytes_total = -1;
  double save_peak_bytes = -1;  // tracked host allocations above the pre-save level during the save
};

// How the runner builds a model (same source, LoRA and device) and a step's micro-batches.
struct RunRecipe {
  std::function<BuiltModel(uint64_t seed)> build_model;
  std::function<std::vector<model::Batch>(int64_t step)> batches;
};

// Collective: checkpoint.load_from's SHARDED checkpoint into `engine` (parameters and optimizer
// state, strict), at init before step 1, as torchtitan's initial load. Its traffic is no step's.
void LoadCheckpointAtInit(EngineUnderTest& engine, const std::string& dir, comm::Communicator* comm);

class CheckpointHarness {
 public:
  CheckpointHarness(const Scenario& s, std::string dir, comm::Communicator* comm);
  bool enabled() const { return kind_name_ != "none"; }
  // The step count after which the run saves (warmup included).
  bool saves_after(int64_t steps_done) const { return enabled() && steps_done == save_after_; }
  int64_t save_after() const { return save_after_; }
  // Collective. Digests this rank's state first when a check will compare against it.
  void save(EngineUnderTest& engine);
  // Collective: a restarted job continues from the checkpoint an earlier attempt saved
  // (harness/resume_point.h): loads it into `engine` (strict) and takes over that save's
  // figures and digests, as if this run had saved it.
  void resume_from(EngineUnderTest& engine, const CheckpointMeasures& saved,
                   std::vector<checkpoint::PieceDigest> digests_at_save);
  const std::vector<checkpoint::PieceDigest>& digests_at_save() const { return at_save_; }
  // Collective-free: the uninterrupted run's final state, for the resume check.
  void remember_final(EngineUnderTest& engine);
  // Collective: the checks the scenario asks for (rank 0's copy is the verdict). Builds a fresh
  // model and engine, loads the checkpoint into it, compares, then trains the remaining steps.
  std::vector<Check> run_checks(const std::vector<double>& run_losses, const RunRecipe& recipe);
  // Collective; removes the checkpoint unless checkpoint.keep, and its resume point always.
  void finish();
  const CheckpointMeasures& measures() const { return measures_; }
  // The tracked-memory figures of the steps before the save (whose peaks the save reset), to
  // combine with the figures after it; empty when nothing was saved.
  const std::optional<memory::MemoryStats>& stats_before_save() const { return stats_before_save_; }

 private:
  const Scenario& s_;
  std::string dir_;
  comm::Communicator* comm_;
  std::string kind_name_;
  int64_t save_after_ = 0;
  std::vector<checkpoint::PieceDigest> at_save_, at_end_;
  CheckpointMeasures measures_;
  std::optional<memory::MemoryStats> stats_before_save_;
};

}  // namespace shardbench
