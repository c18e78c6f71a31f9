// What this binary was built from; recorded in every result's provenance.
#pragma once

#include <string>

namespace shardbench {

struct BuildInfo {
  std::string git_sha;
  bool git_dirty;  // tracked files modified at build time
  std::string build_type;
  std::string compiler;
  std::string torch_version;  // e.g. 2.11.0+cu130
  std::string torch_cuda;     // CUDA version torch was built with, "" for CPU builds
  bool with_cuda;             // GPU path compiled in
  std::string version;        // the project's (CMakeLists.txt)
};

// What `shardbench --version` prints (lines, no final newline): version, commit, build, torch
// and the GPU path.
std::string VersionText(const BuildInfo& b);

const BuildInfo& GetBuildInfo();

}  // namespace shardbench
