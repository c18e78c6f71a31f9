#include "engine/common/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "engine/common/error.h"

namespace shardbench {

ExitCode FileErrorCode(int error_number) {
  switch (error_number) {
    case ENOSPC: case EDQUOT: case EIO: case ENOMEM: case EFBIG: return ExitCode::kInfra;
    default: return ExitCode::kBadInput;
  }
}

void ThrowFileError(const std::string& message, int error_number) {
  const std::string text = message + ": " + std::strerror(error_number);
  if (FileErrorCode(error_number) == ExitCode::kInfra) throw InfraError(text);
  throw InputError(text);
}

void WriteFileAtomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  // A fresh name (O_EXCL: never a file or link already there, whoever planted it), beside the
  // target so the rename stays in one filesystem; rename replaces a link at `path`, never follows it.
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) ThrowFileError("cannot create a temporary file beside " + path, errno);
  ::fchmod(fd, 0644);
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int why = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      ThrowFileError("cannot write " + tmp, why);
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int why = errno;
    ::unlink(tmp.c_str());
    ThrowFileError("cannot move " + tmp + " to " + path, why);
  }
  FsyncDirectory(target.has_parent_path() ? target.parent_path().string() : ".");
}

void FsyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

FileDigest DigestFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot read: " + std::strerror(errno));
  FileDigest d;
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buf(1 << 22);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw InputError(path + ": cannot read: " + why);
    }
    if (n == 0) break;
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
    d.bytes += n;
  }
  ::close(fd);
  d.crc32 = static_cast<uint32_t>(crc);
  return d;
}

}  // namespace shardbench
