#include "harness/scenario/peer_env_spec.h"

#include <algorithm>
#include <regex>

#include "engine/common/error.h"

namespace shardbench {

const std::vector<std::string>& PeerEnvPackages() {
  // What the peer computes with (requirements.txt's pins); torchtune has its own environment.
  static const std::vector<std::string> packages = {"torch", "transformers", "peft", "accelerate"};
  return packages;
}

std::map<std::string, std::string> ParsePeerEnv(const std::string& text) {
  static const std::regex item(R"(\s*([a-z]+)\s*=\s*([0-9][0-9A-Za-z.]*)\s*)");
  std::map<std::string, std::string> out;
  if (text.find_first_not_of(" \t") == std::string::npos) return out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::smatch m;
    if (!std::regex_match(part, m, item)) {
      throw InputError("'" + part + "' is not PACKAGE=VERSION (e.g. torch=2.10.0,peft=0.17.1)");
    }
    const auto& known = PeerEnvPackages();
    if (std::find(known.begin(), known.end(), m[1].str()) == known.end()) {
      throw InputError("'" + m[1].str() +
                       "' is not a package a peer environment pins (torch, transformers, "
                       "peft, accelerate)");
    }
    if (!out.emplace(m[1].str(), m[2].str()).second) throw InputError("'" + m[1].str() + "' named twice");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string CanonicalPeerEnv(const std::map<std::string, std::string>& packages) {
  std::string out;
  for (const auto& name : PeerEnvPackages()) {
    if (auto it = packages.find(name); it != packages.end()) out += (out.empty() ? "" : ",") + name + "=" + it->second;
  }
  return out;
}

std::map<std::string, std::string> AskedPeerVersions(const std::string& env, const std::string& python) {
  if (!env.empty()) return ParsePeerEnv(env);
  static const std::regex legacy(R"(torch-([0-9][0-9A-Za-z.]*))");
  std::smatch m;
  if (std::regex_match(python, m, legacy)) return {{"torch", m[1].str()}};
  return {};
}

}  // namespace shardbench
