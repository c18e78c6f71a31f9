// Checks on paths that users give (scenario, suite and data files, model directories, result
// directories). std::filesystem's plain forms throw when the filesystem cannot even look at a
// path (a name too long, a loop of links, a directory we may not search); these read such a
// path as absent, so the caller's InputError names it with the file, line and field it came
// from instead of an exception escaping past them. POSIX stat rather than std::filesystem on
// purpose: libtorch.so exports its own copies of some std::filesystem functions and ours can
// bind to them.
#pragma once

#include <sys/stat.h>

#include <string>

namespace shardbench {

inline bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

inline bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

inline bool PathExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace shardbench
