// Files that survive a crash whole or not at all: write to a temporary name beside the target,
// fsync, rename into place, fsync the directory. A reader never sees a half-written file, and a
// crash mid-write leaves whatever was there before.
#pragma once

#include <cstdint>
#include <string>

namespace shardbench {

// InfraError naming the path when the disk refuses (full, read-only, missing permission).
void WriteFileAtomically(const std::string& path, const std::string& content);
// fsync a directory so renames inside it are durable (best effort: some filesystems refuse).
void FsyncDirectory(const std::string& dir);
// CRC-32 (zlib's polynomial) of a file's bytes, and its size; InputError if it cannot be read.
struct FileDigest {
  int64_t bytes = 0;
  uint32_t crc32 = 0;
};
FileDigest DigestFile(const std::string& path);

}  // namespace shardbench
