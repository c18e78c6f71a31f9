#include "reporters/release_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "engine/common/error.h"
#include "reporters/format.h"

namespace shardbench {

namespace {

const char* const kPeerPackages[] = {"torch", "transformers", "peft", "accelerate"};

std::string Release(const nlohmann::json& v) {
  if (!v.is_string()) return "none";
  const std::string s = v.get<std::string>();
  return s.substr(0, s.find('+'));
}

double LargestRank(const StoredMetric& m) {
  const auto& values = m.per_rank.empty() ? m.samples : m.per_rank;
  return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
}

// Dot-separated parts; a part that is all digits compares as a number.
std::vector<std::string> Parts(const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = v.find('.', start);
    out.push_back(v.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

bool Numeric(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

}  // namespace

std::map<std::string, std::string> RecordedReleases(const ResultSet& side) {
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& inst : side.instances) {
    if (inst.result.is_null()) continue;
    const StoredResult r = ReadInstance(inst);
    for (const char* p : kPeerPackages) {
      if (r.peer.contains(p)) seen[p].insert(Release(r.peer[p]));
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& [p, values] : seen) {
    std::string joined;
    for (const auto& v : values) joined += (joined.empty() ? "" : "|") + v;
    out[p] = joined;
  }
  return out;
}

std::string ReleaseChanges(const std::map<std::string, std::string>& from,
                           const std::map<std::string, std::string>& to) {
  std::string out;
  for (const char* p : kPeerPackages) {
    const auto a = from.find(p), b = to.find(p);
    const std::string va = a == from.end() ? "none" : a->second, vb = b == to.end() ? "none" : b->second;
    if (va != vb) out += (out.empty() ? "" : ", ") + std::string(p) + " " + va + " -> " + vb;
  }
  return out;
}

Fingerprint FingerprintOf(const ResultSet& side) {
  Fingerprint out;
  for (const auto& inst : side.instances) {
    InstanceFingerprint f;
    f.colour = Colour(inst.status);
    if (!inst.result.is_null()) {
      const StoredResult r = ReadInstance(inst);
      for (const auto& m : r.metrics) {
        if (m.kind == "exact") f.exact[m.name] = LargestRank(m);
      }
      f.warnings = r.peer_warnings;
    }
    out[inst.name] = std::move(f);
  }
  return out;
}

std::vector<std::string> FingerprintChanges(const Fingerprint& from, const Fingerprint& to) {
  std::vector<std::string> out;
  for (const auto& [name, a] : from) {
    const auto it = to.find(name);
    if (it == to.end()) {
      out.push_back(name + ": missing");
      continue;
    }
    const InstanceFingerprint& b = it->second;
    if (a.colour != b.colour) out.push_back(name + ": colour " + a.colour + " -> " + b.colour);
    for (const auto& [metric, va] : a.exact) {
      const auto m = b.exact.find(metric);
      if (m == b.exact.end()) {
        out.push_back(name + ": " + metric + " " + ExactNumber(va) + " -> not measured");
      } else if (m->second != va) {
        out.push_back(name + ": " + metric + " " + ExactNumber(va) + " -> " + ExactNumber(m->second));
      }
    }
    for (const auto& [metric, vb] : b.exact) {
      if (!a.exact.count(metric)) out.push_back(name + ": " + metric + " not measured -> " + ExactNumber(vb));
    }
    if (a.warnings != b.warnings) {
      out.push_back(name + ": warnings " + std::to_string(a.warnings.size()) + " -> " +
                    std::to_string(b.warnings.size()) +
                    (b.warnings.empty() ? "" : " (first now: " + b.warnings.front().substr(0, 160) + ")"));
    }
  }
  for (const auto& [name, b] : to) {
    if (!from.count(name)) out.push_back(name + ": new (" + b.colour + ")");
  }
  return out;
}

std::string SideFiguresMarkdown(const std::vector<std::string>& labels, const std::vector<const ResultSet*>& sides) {
  std::string md = "| instance |";
  for (const auto& l : labels) md += " " + EscapeMarkdown(l) + " |";
  md += "\n|---|";
  for (size_t i = 0; i < labels.size(); ++i) md += "---|";
  md += "\n";
  std::vector<std::string> names;
  for (const auto* side : sides) {
    for (const auto& inst : side->instances) {
      if (std::find(names.begin(), names.end(), inst.name) == names.end()) names.push_back(inst.name);
    }
  }
  for (const auto& name : names) {
    md += "| " + EscapeMarkdown(name) + " |";
    for (const auto* side : sides) {
      const InstanceResult* inst = side->find(name);
      if (!inst) {
        md += " absent |";
        continue;
      }
      std::string cell = Colour(inst->status);
      if (!inst->result.is_null()) {
        const StoredResult r = ReadInstance(*inst);
        for (const auto& [metric, label] :
             std::vector<std::pair<const char*, const char*>>{{"grad_bytes", "grad"},
                                                              {"param_bytes", "param"},
                                                              {"optim_state_bytes", "optim"},
                                                              {"comm_all_gather_bytes", "gathered"},
                                                              {"tokens_per_s", "tok/s"}}) {
          if (const StoredMetric* m = r.metric(metric)) {
            const double v = m->kind == "exact" ? LargestRank(*m) : m->median.value_or(0);
            cell += ", " + std::string(label) + " " + ExactNumber(m->kind == "exact" ? v : std::round(v));
          }
        }
      }
      md += " " + EscapeMarkdown(cell) + " |";
    }
    md += "\n";
  }
  return md;
}

bool ReleaseLess(const std::string& a, const std::string& b) {
  const auto pa = Parts(a), pb = Parts(b);
  for (size_t i = 0; i < std::min(pa.size(), pb.size()); ++i) {
    if (pa[i] == pb[i]) continue;
    if (Numeric(pa[i]) && Numeric(pb[i])) {
      if (pa[i].size() != pb[i].size()) return pa[i].size() < pb[i].size();  // no leading zeros in releases
      return pa[i] < pb[i];
    }
    return pa[i] < pb[i];
  }
  return pa.size() < pb.size();
}

std::vector<std::string> ReleasesBetween(const std::vector<std::string>& available, const std::string& package,
                                         const std::string& oldest, const std::string& newest) {
  std::vector<std::string> sorted = available;
  std::sort(sorted.begin(), sorted.end(), ReleaseLess);
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string listed;
  for (const auto& v : sorted) listed += (listed.empty() ? "" : ", ") + v;
  for (const auto& end : {oldest, newest}) {
    if (std::find(sorted.begin(), sorted.end(), end) == sorted.end()) {
      throw InputError("--bisect " + package + ": release " + end + " is not in the wheelhouse (it has: " +
                       (listed.empty() ? std::string("none") : listed) + "; scripts/fetch-wheels.sh fetches releases)");
    }
  }
  if (!ReleaseLess(oldest, newest)) {
    throw InputError("--bisect " + package + ": " + oldest + " is not older than " + newest);
  }
  std::vector<std::string> out;
  for (const auto& v : sorted) {
    if (!ReleaseLess(v, oldest) && !ReleaseLess(newest, v)) out.push_back(v);
  }
  return out;
}

BisectResult Bisect(const std::vector<std::string>& releases,
                    const std::function<Fingerprint(const std::string&)>& run) {
  BisectResult out;
  if (releases.size() < 2) return out;
  std::map<size_t, Fingerprint> known;
  auto at = [&](size_t i) -> const Fingerprint& {
    if (!known.count(i)) {
      out.tried.push_back(releases[i]);
      known[i] = run(releases[i]);
    }
    return known[i];
  };
  size_t lo = 0, hi = releases.size() - 1;  // lo agrees with the oldest, hi does not
  const Fingerprint& oldest = at(lo);       // the oldest first, then the newest
  if (at(hi) == oldest) return out;
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    (at(mid) == at(0) ? lo : hi) = mid;
  }
  out.first_changed = hi;
  out.changes = FingerprintChanges(at(lo), at(hi));
  return out;
}

}  // namespace shardbench
