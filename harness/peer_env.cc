#include "harness/peer_env.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "engine/common/error.h"
#include "harness/suite.h"

namespace shardbench {
namespace fs = std::filesystem;

std::string PeerEnvRoot() {
  if (const char* root = std::getenv("SHARDBENCH_PEER_ENVS"); root && *root) return root;
  return ProjectDir();
}

std::string PeerEnvDir(const std::map<std::string, std::string>& packages) {
  std::string name;
  for (const auto& name_version : PeerEnvPackages()) {
    if (auto it = packages.find(name_version); it != packages.end()) {
      name += (name.empty() ? "" : "_") + name_version + "-" + it->second;
    }
  }
  return PeerEnvRoot() + "/.venv-peer-" + name;
}

void EnsurePeerEnv(const std::map<std::string, std::string>& packages) {
  const std::string dir = PeerEnvDir(packages), spec = CanonicalPeerEnv(packages);
  if (fs::is_regular_file(dir + "/shardbench-env.json")) return;
  // The spec is validated (letters, digits, dots, '=' and ','); paths are quoted for sh.
  auto quoted = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string command = "bash " + quoted(ProjectDir() + "/scripts/peer-env.sh") + " " + quoted(spec) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw InfraError("peer.env '" + spec + "': could not start scripts/peer-env.sh");
  std::string line, last;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) {
    std::fputs(buffer, stderr);  // its progress and its words, as it prints them
    line += buffer;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      if (!line.empty()) last = line;
      line.clear();
    }
  }
  const int status = ::pclose(pipe);
  if (!line.empty()) last = line;
  if (status != 0 || !fs::is_regular_file(dir + "/shardbench-env.json")) {
    throw InfraError("peer.env '" + spec + "': the environment " + dir + " could not be built: " + last);
  }
}

void CheckImportedVersions(const std::map<std::string, std::string>& asked, const nlohmann::json& imported,
                           const std::string& python) {
  std::string differ;
  for (const auto& [name, version] : asked) {
    const auto it = imported.find(name);
    std::string got = it != imported.end() && it->is_string() ? it->get<std::string>() : "none";
    got = got.substr(0, got.find('+'));  // 2.11.0+cu130: the same release
    if (got != version) differ += (differ.empty() ? "" : ", ") + name + " " + got + " (asked " + version + ")";
  }
  if (!differ.empty()) {
    throw InfraError("the peer (" + python + ") imported " + differ +
                     ": its environment is not what the scenario names, so this run is not that release's; refused");
  }
}

}  // namespace shardbench
