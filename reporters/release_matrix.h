// A release matrix read back (cli/matrix_command.h runs it): what each side recorded of its
// releases, what changed between neighbours, and bisecting a range of releases to the first one
// whose results differ. Pure: result sets in, facts out (no runs, no files), so every rule here
// is tested without building an environment.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reporters/result_set.h"

namespace shardbench {

// The peer library versions a side's results recorded (provenance.peer: torch, transformers,
// peft, accelerate; local tags like +cu130 dropped), with every distinct value when instances
// disagree ("2.10.0|2.11.0"): what the side actually ran, not what it asked.
std::map<std::string, std::string> RecordedReleases(const ResultSet& side);
// "torch 2.10.0 -> 2.11.0, peft 0.17.1 -> 0.18.1"; empty when the two ran the same releases.
std::string ReleaseChanges(const std::map<std::string, std::string>& from,
                           const std::map<std::string, std::string>& to);

// What a bisection compares: per instance, its colour and every exact metric (the largest
// rank's value) and the warnings its libraries raised. Sampled metrics are left out: a
// bisection step runs once, and one launch cannot judge them.
struct InstanceFingerprint {
  std::string colour;
  std::map<std::string, double> exact;
  std::vector<std::string> warnings;
  bool operator==(const InstanceFingerprint& o) const {
    return colour == o.colour && exact == o.exact && warnings == o.warnings;
  }
};
using Fingerprint = std::map<std::string, InstanceFingerprint>;  // by instance name
Fingerprint FingerprintOf(const ResultSet& side);
// Each difference in words ("inst: colour green -> red", "inst: grad_bytes 74752 -> 126912").
std::vector<std::string> FingerprintChanges(const Fingerprint& from, const Fingerprint& to);

// One row per instance, one column per side: its colour and a few figures as that side measured
// them (gradient, parameter and optimizer-state bytes and all-gathered bytes, exact; tokens/s,
// the median of what it sampled), so that a report shows the bytes even where nothing moved.
std::string SideFiguresMarkdown(const std::vector<std::string>& labels, const std::vector<const ResultSet*>& sides);

// Release order: dot-separated parts, numeric ones compared as numbers, others as text
// ("0.9.1" < "0.10.0", "2.10.0" < "2.10.0.post1").
bool ReleaseLess(const std::string& a, const std::string& b);
// The releases of `package` from `oldest` to `newest` (both included, ordered) among the
// versions given (a wheelhouse's). InputError when either end is not among them.
std::vector<std::string> ReleasesBetween(const std::vector<std::string>& available, const std::string& package,
                                         const std::string& oldest, const std::string& newest);

struct BisectResult {
  std::optional<size_t> first_changed;  // index into the releases; nullopt: the ends agree
  std::vector<std::string> changes;     // between the release before it and it
  std::vector<std::string> tried;       // releases run, in order
};
// The first release whose fingerprint differs from the oldest's, assuming one transition
// between the ends (binary search: the ends, then about log2(n) more runs).
BisectResult Bisect(const std::vector<std::string>& releases,
                    const std::function<Fingerprint(const std::string&)>& run);

}  // namespace shardbench
