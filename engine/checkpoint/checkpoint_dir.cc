#include "engine/checkpoint/checkpoint_dir.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/comm/gather_strings.h"
#include "engine/common/durable_file.h"
#include "engine/common/error.h"

namespace shardbench::checkpoint {
namespace fs = std::filesystem;
namespace {

bool IsOurs(const fs::path& dir) { return fs::exists(dir / kManifestFile); }

// Swaps `staging` into `target`'s place; afterwards `staging` names the old directory (if
// there was one). RENAME_EXCHANGE keeps `target` complete throughout; filesystems without it
// get two renames (a crash between them leaves the old checkpoint at `<target>.old`).
void SwapIntoPlace(const fs::path& staging, const fs::path& target) {
  if (!fs::exists(target)) {
    if (::rename(staging.c_str(), target.c_str()) != 0) {
      throw InfraError("checkpoint " + target.string() + ": cannot move " + staging.string() + " into place: " +
                       std::strerror(errno));
    }
    return;
  }
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) return;
  const fs::path old = target.string() + ".old";
  fs::remove_all(old);
  if (::rename(target.c_str(), old.c_str()) != 0 || ::rename(staging.c_str(), target.c_str()) != 0 ||
      ::rename(old.c_str(), staging.c_str()) != 0) {
    throw InfraError("checkpoint " + target.string() + ": cannot replace it with " + staging.string() + ": " +
                     std::strerror(errno));
  }
}

}  // namespace

std::string RankFileName(const std::string& prefix, int rank, int world_size) {
  char name[64];
  std::snprintf(name, sizeof(name), "-%05d-of-%05d.safetensors", rank, world_size);
  return prefix + name;
}

bool CrashBeforeManifestRequested() {
  const char* v = std::getenv("SHARDBENCH_CRASH_BEFORE_MANIFEST");
  return v && std::string(v) == "1";
}

CheckpointWriter::CheckpointWriter(std::string dir, comm::Communicator* comm)
    : dir_(std::move(dir)), staging_(dir_ + ".saving"), comm_(comm) {
  std::string refusal;
  if ((!comm_ || comm_->rank() == 0)) {
    const fs::path target(dir_);
    if (fs::exists(target) && !(fs::is_directory(target) && (fs::is_empty(target) || IsOurs(target)))) {
      refusal = "checkpoint " + dir_ + ": exists and is not a shardbench checkpoint (no " + kManifestFile +
                "); refusing to replace it";
    } else {
      fs::remove_all(staging_);
      fs::create_directories(staging_);
    }
  }
  // Everyone learns whether rank 0 refused, so no rank writes into a directory that is not there.
  const auto verdicts = comm::AllGatherStrings(comm_, refusal);
  if (!verdicts[0].empty()) throw InputError(verdicts[0]);
}

std::string CheckpointWriter::staging_path(const std::string& file) const { return (fs::path(staging_) / file).string(); }

int64_t CheckpointWriter::commit(Manifest manifest, const std::vector<std::string>& my_files) {
  const int rank = comm_ ? comm_->rank() : 0;
  nlohmann::json mine = nlohmann::json::object();
  for (const auto& name : my_files) {
    const FileDigest d = DigestFile(staging_path(name));
    mine[name] = {{"bytes", d.bytes}, {"crc32", d.crc32}, {"rank", rank}};
  }
  int64_t total = 0;
  for (const auto& text : comm::AllGatherStrings(comm_, mine.dump())) {
    const nlohmann::json theirs = nlohmann::json::parse(text);
    for (const auto& [name, digest] : theirs.items()) {
      if (manifest.files.contains(name)) throw InfraError("checkpoint " + dir_ + ": two ranks wrote '" + name + "'");
      manifest.files[name] = digest;
      total += digest["bytes"].get<int64_t>();
    }
  }
  std::string failure;
  if (rank == 0) {
    if (CrashBeforeManifestRequested()) ::_exit(137);
    try {
      nlohmann::json m = {{"format", "shardbench-checkpoint"}, {"format_version", kFormatVersion},
                          {"kind", manifest.kind},           {"world_size", manifest.world_size},
                          {"files", manifest.files},         {"content", manifest.content}};
      WriteFileAtomically(staging_path(kManifestFile), m.dump(1) + "\n");
      FsyncDirectory(staging_);
      SwapIntoPlace(staging_, dir_);
      FsyncDirectory(fs::path(dir_).parent_path().empty() ? "." : fs::path(dir_).parent_path().string());
      fs::remove_all(staging_);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  const auto outcome = comm::AllGatherStrings(comm_, failure);
  if (!outcome[0].empty()) throw InfraError("checkpoint " + dir_ + ": commit failed on rank 0: " + outcome[0]);
  return total;
}

namespace {

Manifest ReadManifest(const std::string& dir, const std::string& kind) {
  const fs::path root(dir);
  if (!fs::is_directory(root)) throw InputError("checkpoint " + dir + ": no such directory");
  const fs::path mpath = root / kManifestFile;
  if (!fs::exists(mpath)) {
    throw InputError("checkpoint " + dir + ": no " + kManifestFile +
                     " (an interrupted save, or not a shardbench checkpoint)");
  }
  nlohmann::json m;
  try {
    std::ifstream in(mpath);
    m = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(mpath.string() + ": not valid JSON: " + e.what());
  }
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!m.contains(key)) throw InputError(mpath.string() + ": missing field '" + key + "'");
    return m[key];
  };
  if (field("format") != "shardbench-checkpoint" || field("format_version") != kFormatVersion) {
    throw InputError(mpath.string() + ": format " + m["format"].dump() + " version " + m["format_version"].dump() +
                     ", expected shardbench-checkpoint version " + std::to_string(kFormatVersion));
  }
  Manifest out;
  try {
    out.kind = field("kind").get<std::string>();
    out.world_size = field("world_size").get<int>();
    out.files = field("files");
    out.content = field("content");
    if (out.world_size < 1) throw InputError(mpath.string() + ": world_size " + std::to_string(out.world_size) + " is not >= 1");
    for (const auto& [name, want] : out.files.items()) {
      (void)want.at("bytes").get<int64_t>();
      (void)want.at("crc32").get<uint32_t>();
      const int rank = want.at("rank").get<int>();
      if (rank < 0 || rank >= out.world_size) {
        throw InputError(mpath.string() + ": file '" + name + "' has rank " + std::to_string(rank) + ", not in 0.." +
                         std::to_string(out.world_size - 1));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(mpath.string() + ": malformed: " + e.what());
  }
  if (!kind.empty() && out.kind != kind) {
    throw InputError("checkpoint " + dir + ": is a " + out.kind + " checkpoint, expected " + kind);
  }
  return out;
}

// Sizes of every file; CRC-32 of the files this rank is assigned.
void VerifyFiles(const std::string& dir, const Manifest& m, int rank, int world_size) {
  int index = 0;
  for (const auto& [name, want] : m.files.items()) {
    const fs::path p = fs::path(dir) / name;
    if (!fs::exists(p)) throw InputError("checkpoint " + dir + ": file '" + name + "' listed in the manifest is missing");
    const int64_t bytes = want.at("bytes").get<int64_t>();
    const int64_t size = static_cast<int64_t>(fs::file_size(p));
    if (size != bytes) {
      throw InputError("checkpoint " + dir + ": file '" + name + "' is " + std::to_string(size) +
                       " bytes, the manifest says " + std::to_string(bytes) + " (truncated or replaced)");
    }
    if (index++ % world_size != rank) continue;
    if (DigestFile(p.string()).crc32 != want.at("crc32").get<uint32_t>()) {
      throw InputError("checkpoint " + dir + ": file '" + name + "' fails its CRC-32 check (corrupt)");
    }
  }
}

}  // namespace

Manifest OpenVerifiedCheckpoint(const std::string& dir, const std::string& kind, comm::Communicator* comm) {
  const int rank = comm ? comm->rank() : 0, ws = comm ? comm->world_size() : 1;
  Manifest m;
  std::string error;
  try {
    m = ReadManifest(dir, kind);
    VerifyFiles(dir, m, rank, ws);
  } catch (const Error& e) {
    error = e.what();
  }
  for (const auto& e : comm::AllGatherStrings(comm, error)) {
    if (!e.empty()) throw InputError(e);
  }
  return m;
}

}  // namespace shardbench::checkpoint
