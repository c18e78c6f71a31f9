// A checkpoint directory written by several ranks and committed as a whole.
//
// Save protocol (collective): rank 0 clears a staging directory `<dir>.saving` (the leftover
// of a save that was killed, if any); every rank writes its files there; each rank digests
// (size + CRC-32) what it wrote and the digests are gathered; rank 0 writes `manifest.json`
// last, then swaps the staging directory into place (renameat2 RENAME_EXCHANGE, so `dir`
// always names a complete checkpoint, old or new) and removes the old one. A process killed at
// any point leaves the previous checkpoint at `dir` intact. Ranks must share a filesystem (as
// torch.distributed.checkpoint assumes).
//
// Load verifies before anything is read: the manifest exists (no manifest = an interrupted
// save or not a shardbench checkpoint), is of the expected kind, and every file it lists has
// its recorded size (truncation) and CRC-32 (corruption). The CRC work is split across ranks
// (file i by rank i mod world size) and every rank gets the same verdict.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "engine/comm/communicator.h"

namespace shardbench::checkpoint {

constexpr const char* kManifestFile = "manifest.json";
constexpr int kFormatVersion = 1;

struct Manifest {
  std::string kind;            // full | sharded | local | adapter
  int world_size = 1;          // of the job that saved it
  nlohmann::json content = nlohmann::json::object();  // the kind's own index/layout
  nlohmann::json files = nlohmann::json::object();    // name -> {bytes, crc32, rank}
};

class CheckpointWriter {
 public:
  // Collective. InputError if `dir` exists and is neither empty nor a shardbench checkpoint
  // (nothing that is not ours is ever replaced).
  CheckpointWriter(std::string dir, comm::Communicator* comm);
  // Where this rank writes `file` (a plain name) before commit.
  std::string staging_path(const std::string& file) const;
  // Collective: `my_files` are the names this rank wrote. Rank 0 writes the manifest (with
  // every rank's digests) and moves the checkpoint into place; returns the total bytes of
  // all files (every rank gets the same figure) once the checkpoint is visible to everyone.
  int64_t commit(Manifest manifest, const std::vector<std::string>& my_files);

 private:
  std::string dir_, staging_;
  comm::Communicator* comm_;
};

// Collective (`comm` may be null). Verifies `dir` as described above; `kind` empty accepts
// any. InputError naming the directory, the file and what was expected otherwise.
Manifest OpenVerifiedCheckpoint(const std::string& dir, const std::string& kind, comm::Communicator* comm);

// "<prefix>-RRRRR-of-WWWWW.safetensors": the file rank R of W writes in a per-rank checkpoint.
std::string RankFileName(const std::string& prefix, int rank, int world_size);

// Named switch for tests of the crash guarantee: SHARDBENCH_CRASH_BEFORE_MANIFEST=1 makes rank
// 0 exit (as if killed) after every rank's files are written and before the manifest.
bool CrashBeforeManifestRequested();

}  // namespace shardbench::checkpoint
