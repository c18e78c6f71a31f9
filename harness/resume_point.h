// What a rank leaves beside the scenario's checkpoint so that a restarted job (torchrun
// --max-restarts: TORCHELASTIC_RESTART_COUNT > 0) continues the interrupted instance from that
// checkpoint instead of from step 1: the steps already taken, this rank's record of them (step
// times, losses, and the measured window's counts and peaks up to the save), the save's own
// figures and the digests the state_dict_roundtrip check compares against. One file per rank
// under <checkpoint>.resume/, written after the save completed, removed when the instance ends.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/param_pieces.h"
#include "harness/checkpoint_harness.h"
#include "harness/rank_record.h"

namespace shardbench {

struct ResumePoint {
  std::string scenario;       // the resolved scenario (YAML) it was saved by: another one's is not resumed
  int64_t steps_done = 0;     // the checkpoint holds the state after this many steps
  std::vector<double> record; // RankRecord::pack() at the save
  CheckpointMeasures save;    // the save's time and bytes (load figures unset)
  std::vector<checkpoint::PieceDigest> digests;  // the state at the save (state_dict_roundtrip only)
};

std::string ResumeDir(const std::string& checkpoint_dir);
// Atomic; the directory is created.
void WriteResumePoint(const std::string& checkpoint_dir, int rank, const ResumePoint& point);
// Empty when this rank has none; a damaged file is an InfraError naming it.
std::optional<ResumePoint> ReadResumePoint(const std::string& checkpoint_dir, int rank);

}  // namespace shardbench
