#include "reporters/peer_warnings.h"

#include <map>

namespace shardbench {

std::vector<std::string> FoldPeerWarnings(const std::vector<std::string>& warnings) {
  // By the text after the first word, in the order first raised.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> units;
  for (const auto& w : warnings) {
    const size_t space = w.find(' ');
    const std::string rest = space == std::string::npos ? w : w.substr(space);
    if (!units.count(rest)) order.push_back(rest);
    units[rest].push_back(space == std::string::npos ? "" : w.substr(0, space));
  }
  std::vector<std::string> out;
  for (const auto& rest : order) {
    const auto& names = units[rest];
    if (names.size() == 1) {
      out.push_back(names[0] + rest);
      continue;
    }
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    out.push_back("<unit>" + rest + " (" + std::to_string(names.size()) + " units: " + list + ")");
  }
  return out;
}

}  // namespace shardbench
