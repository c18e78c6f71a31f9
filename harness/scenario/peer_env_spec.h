// The text of `peer.env` (harness/peer_env.h builds and checks the environment it names):
// "torch=2.10.0,peft=0.17.1", the releases a peer environment holds.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace shardbench {

// The packages a peer environment may pin, in canonical order.
const std::vector<std::string>& PeerEnvPackages();

// "peft=0.17.1, torch=2.10.0" -> {peft: 0.17.1, torch: 2.10.0}. InputError (the field's words,
// the caller adds file and line) on an unknown package, a malformed version, a repeat.
std::map<std::string, std::string> ParsePeerEnv(const std::string& text);
// The canonical text: packages in PeerEnvPackages() order, "name=version" joined by ",".
std::string CanonicalPeerEnv(const std::map<std::string, std::string>& packages);

// The versions a peer run was asked for: peer.env's, or torch's of a legacy environment name
// (peer.python: torch-2.10.0). Empty: nothing asked, nothing to check.
std::map<std::string, std::string> AskedPeerVersions(const std::string& env, const std::string& python);

}  // namespace shardbench
