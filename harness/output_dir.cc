#include "harness/output_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "engine/common/error.h"

namespace shardbench {

OutputDirLock::OutputDirLock(const std::string& dir, bool continuing) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) ThrowFileError("--out " + dir + ": cannot create the directory", ec.value());
  const std::string path = dir + "/" + kFile;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) ThrowFileError("--out " + dir + ": cannot open its lock " + path, errno);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    char holder[32] = {0};
    const ssize_t n = ::pread(fd_, holder, sizeof(holder) - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (why != EWOULDBLOCK) ThrowFileError("--out " + dir + ": cannot lock " + path, why);
    std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "unknown";
    while (!pid.empty() && std::isspace(static_cast<unsigned char>(pid.back()))) pid.pop_back();
    throw InputError("--out " + dir + " is in use by another shardbench run (PID " + pid +
                     "): give each run its own --out");
  }
  if (!continuing && std::filesystem::exists(dir + "/index.json")) {
    ::close(fd_);
    fd_ = -1;
    throw InputError("--out " + dir + " already holds a run (index.json): give this run a new directory, or remove "
                     "that one first (`shardbench merge` pools runs)");
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    ThrowFileError("--out " + dir + ": cannot write its lock " + path, errno);
  }
}

OutputDirLock::~OutputDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock; the file stays (harmless, reused)
}

std::string SafeName(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '=' || c == '_') ? c : '_';
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

void CheckInstanceFileNames(const std::vector<std::pair<std::string, std::string>>& names_and_wheres) {
  std::unordered_map<std::string, size_t> by_file;
  for (size_t i = 0; i < names_and_wheres.size(); ++i) {
    const auto& [name, where] = names_and_wheres[i];
    const std::string file = SafeName(name);
    if (file.empty() || file == "." || file == ".." || file == "index") {
      throw InputError(where + ": instance name '" + name + "' cannot name files under --out (it becomes '" + file +
                       "'): use letters, digits, '.', '-', '=' or '_'");
    }
    // A file name stops at NAME_MAX (255) bytes; ".json" and mkostemp's ".tmp.XXXXXX" need the rest.
    if (file.size() > kMaxInstanceFileName) {
      throw InputError(where + ": instance name '" + name.substr(0, 40) + "...' (" + std::to_string(name.size()) +
                       " characters) is too long to name files under --out: at most " +
                       std::to_string(kMaxInstanceFileName) + " (give the run a shorter name)");
    }
    auto [it, fresh] = by_file.emplace(file, i);
    if (!fresh) {
      const auto& [first, first_where] = names_and_wheres[it->second];
      throw InputError(where + ": instance '" + name + "' would write " + file + ".json under --out, as '" + first +
                       "' (" + first_where + ") does: give one a name that differs in letters, digits, '.', '-', '=' or '_'");
    }
  }
}

}  // namespace shardbench
