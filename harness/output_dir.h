// The run directory (--out) is one run's alone: a lock held for the run's lifetime (a second
// run on the same directory is refused naming the holder's PID; the kernel drops the lock when
// the holder dies, so a crashed run leaves nothing stale), and every instance's files have
// names of their own inside it (no two instances mapped onto one file, none outside --out).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace shardbench {

class OutputDirLock {
 public:
  // Creates `dir` (0755) if needed and takes its lock; InputError when another run holds it,
  // or when `dir` already holds a run (index.json) and this is not that run continuing
  // (`continuing`: a torchrun restart of the same job): a finished run is never overwritten.
  explicit OutputDirLock(const std::string& dir, bool continuing = false);
  ~OutputDirLock();
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;
  static constexpr const char* kFile = ".shardbench.lock";

 private:
  int fd_ = -1;
};

// The file-system name of an instance: characters other than [A-Za-z0-9.=_-] become '_'.
std::string SafeName(const std::string& name);

// InputError unless every instance name maps to its own file name under --out: not empty, not
// '.' or '..', not 'index' (index.json is the run's), and no two instances onto one name (a/b
// and a_b both become a_b; two runs of one name). Each name comes with where it was declared
// ("suite.yaml:12 (name)"), which the error names; nor longer than kMaxInstanceFileName. Linear time.
constexpr size_t kMaxInstanceFileName = 200;
void CheckInstanceFileNames(const std::vector<std::pair<std::string, std::string>>& names_and_wheres);

}  // namespace shardbench
