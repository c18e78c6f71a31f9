// Peer environments named by what they hold: `peer.env: torch=2.10.0,peft=0.17.1` is a Python
// environment with those releases and requirements.txt's pins for every other package, made by
// scripts/peer-env.sh from the wheelhouse (.wheels/, filled by scripts/fetch-wheels.sh where a
// registry is reachable; the build itself never reaches one). A release matrix is scenarios
// that differ in peer.env. Loud by construction: an environment that cannot be built is exit 3
// naming the package and version, and a run whose peer imported other versions than its
// environment's name says is refused (exit 3), never reported as that release.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/scenario/peer_env_spec.h"

namespace shardbench {

// Where peer environments live: $SHARDBENCH_PEER_ENVS, else the project directory.
std::string PeerEnvRoot();
// <root>/.venv-peer-<name>, the name from the canonical spec ("peft-0.17.1_torch-2.10.0").
std::string PeerEnvDir(const std::map<std::string, std::string>& packages);

// Builds the environment unless it is built already (scripts/peer-env.sh writes
// <dir>/shardbench-env.json last). InfraError naming the package when it cannot be built.
void EnsurePeerEnv(const std::map<std::string, std::string>& packages);

// InfraError when `imported` (records.json's provenance `peer`: package -> version, local
// tags like +cu130 ignored) differs from `asked` for any asked package.
void CheckImportedVersions(const std::map<std::string, std::string>& asked, const nlohmann::json& imported,
                           const std::string& python);

}  // namespace shardbench
