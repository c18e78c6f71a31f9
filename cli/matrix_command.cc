#include "cli/matrix_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/run_command.h"
#include "engine/common/durable_file.h"
#include "engine/common/error.h"
#include "harness/peer_env.h"
#include "harness/repetition_launch.h"
#include "harness/suite.h"
#include "reporters/compare.h"
#include "reporters/compare_reports.h"
#include "reporters/format.h"
#include "reporters/release_matrix.h"

namespace shardbench::cli {
namespace {
namespace fs = std::filesystem;

// One side of the matrix: what it asks (every pinned package, the spec's over requirements.txt's)
// and the override that gives it to every instance.
struct Side {
  std::string label;  // "torch=2.10.0" or "project"
  std::string dir;    // under --out
  std::map<std::string, std::string> asked;
  std::string override_;
};

std::map<std::string, std::string> ProjectPins() {
  std::map<std::string, std::string> pins;
  std::ifstream in(ProjectDir() + "/requirements.txt");
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    const size_t eq = line.find("==");
    if (eq == std::string::npos) continue;
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    pins[trim(line.substr(0, eq))] = trim(line.substr(eq + 2));
  }
  return pins;
}

Side MakeSide(const std::string& label, const std::string& out) {
  Side side{label, "", {}, ""};
  const auto pins = ProjectPins();
  for (const auto& p : PeerEnvPackages()) {
    if (pins.count(p)) side.asked[p] = pins.at(p);
  }
  if (label == "project") {
    side.dir = out + "/project";
    side.override_ = "peer.python=project";
    return side;
  }
  std::map<std::string, std::string> spec;
  try {
    spec = ParsePeerEnv(label);
  } catch (const InputError& e) {
    throw InputError("matrix --env '" + label + "': " + e.what());
  }
  if (spec.empty()) throw InputError("matrix --env '" + label + "': expected PACKAGE=VERSION,... or project");
  for (const auto& [p, v] : spec) side.asked[p] = v;
  side.dir = out + "/" + fs::path(PeerEnvDir(spec)).filename().string().substr(std::string(".venv-peer-").size());
  side.override_ = "peer.env=" + CanonicalPeerEnv(spec);
  return side;
}

std::string Asked(const Side& s) {
  std::string out;
  for (const auto& [p, v] : s.asked) out += (out.empty() ? "" : " ") + p + " " + v;
  return out;
}

// Runs the target's peer instances on one side; a side that did not run (exit >= 2) stops the matrix.
void RunSide(const MatrixArgs& args, const Side& side, int repetitions, const std::string& self_exe) {
  RunArgs run;
  run.target = args.target;
  run.overrides = args.overrides;
  run.release_side = side.override_;
  run.only = args.only;
  run.out_dir = side.dir;
  run.repetitions = repetitions;
  run.quiet = true;
  std::printf("matrix: %s (%s) -> %s\n", side.label.c_str(), Asked(side).c_str(), side.dir.c_str());
  std::fflush(stdout);
  const int rc = RunCommand(run, self_exe);
  if (rc >= 2) {
    throw Error(static_cast<ExitCode>(rc), "matrix: side " + side.label + " did not run (exit " + std::to_string(rc) +
                                               "): stopped, nothing compared");
  }
}

std::string PairReport(const Side& a, const Side& b, const ResultSet& ra, const ResultSet& rb, const Comparison& c,
                       bool* same) {
  const std::string releases = ReleaseChanges(RecordedReleases(ra), RecordedReleases(rb));
  *same = releases.empty();
  std::string md = "## " + a.label + " -> " + b.label + "\n\n";
  md += "- releases recorded: " +
        (releases.empty() ? std::string("the same on both sides: not a version comparison") : releases) + "\n";
  md += "- gate: " + c.colour() + " (" + std::to_string(c.regressions()) + " regressions, " +
        std::to_string(c.failed_checks()) + " failed checks; report " + fs::path(a.dir).filename().string() + "_vs_" +
        fs::path(b.dir).filename().string() + ".md)\n";
  const auto changes = FingerprintChanges(FingerprintOf(ra), FingerprintOf(rb));
  md += "- exact metrics, colours and warnings that changed: " + std::to_string(changes.size()) + "\n";
  for (const auto& ch : changes) md += "  - " + EscapeMarkdown(ch) + "\n";
  for (const auto& m : c.metrics) {
    if (m.red()) {
      md += "  - regression: " + EscapeMarkdown(m.instance) + " " + m.metric + " " + ExactNumber(m.base) + " -> " +
            ExactNumber(m.current) + " (" + FormatDelta(m.ratio) + ")\n";
    }
  }
  return md + "\n";
}

int RunMatrix(const MatrixArgs& args, const std::string& out, const std::string& self_exe) {
  if (args.envs.size() < 2) throw InputError("matrix: give at least two --env sides (PACKAGE=VERSION,... or project)");
  std::vector<Side> sides;
  for (const auto& e : args.envs) sides.push_back(MakeSide(e, out));
  for (size_t i = 1; i < sides.size(); ++i) {
    if (sides[i].asked == sides[i - 1].asked) {
      throw InputError("matrix: --env " + sides[i - 1].label + " and --env " + sides[i].label +
                       " ask for the same releases (" + Asked(sides[i]) + "): not a version comparison");
    }
  }
  for (auto& side : sides) {
    const std::string earlier = args.reuse + "/" + fs::path(side.dir).filename().string();
    if (!args.reuse.empty() && fs::is_regular_file(earlier + "/index.json")) {
      std::printf("matrix: %s read from %s (--reuse)\n", side.label.c_str(), earlier.c_str());
      side.dir = earlier;
      continue;
    }
    RunSide(args, side, args.repetitions, self_exe);
  }
  fs::create_directories(out);
  const GatePolicy policy = args.policy.empty() ? DefaultGatePolicy() : LoadGatePolicy(args.policy);
  std::string md =
      "# Release matrix: " + args.target + "\n\nSides, oldest first (asked; every peer result recorded its own):\n\n";
  for (const auto& s : sides) md += "- " + s.label + ": " + Asked(s) + " (" + s.dir + "/)\n";
  md += "\n";
  std::vector<ResultSet> sets;
  std::vector<std::string> labels;
  for (const auto& s : sides) {
    sets.push_back(LoadResultSet(s.dir));
    labels.push_back(s.label);
  }
  std::vector<const ResultSet*> set_ptrs;
  for (const auto& s : sets) set_ptrs.push_back(&s);
  md += "Per side (bytes: the largest rank's, exact; tok/s: median of the side's launches):\n\n" +
        SideFiguresMarkdown(labels, set_ptrs) + "\n";
  bool red = false, same_releases = false;
  for (size_t i = 1; i < sides.size(); ++i) {
    const ResultSet &ra = sets[i - 1], &rb = sets[i];
    const Comparison c = Compare(ra, rb, policy, TodayUtc());
    const std::string pair =
        fs::path(sides[i - 1].dir).filename().string() + "_vs_" + fs::path(sides[i].dir).filename().string();
    WriteFileAtomically(out + "/" + pair + ".md", MarkdownReport(c));
    bool same = false;
    const std::string section = PairReport(sides[i - 1], sides[i], ra, rb, c, &same);
    md += section;
    std::fputs(section.c_str(), stdout);
    red |= !c.green();
    same_releases |= same;
  }
  WriteFileAtomically(out + "/matrix.md", md);
  std::printf("matrix: report %s/matrix.md\n", out.c_str());
  if (same_releases) {
    throw InfraError("matrix: neighbours recorded the same releases although they asked for different ones (see " +
                     out + "/matrix.md)");
  }
  return red ? static_cast<int>(ExitCode::kRegression) : 0;
}

// The versions of `package` the wheelhouse holds (file names "<dist>-<version>-...whl").
std::vector<std::string> WheelhouseReleases(const std::string& package) {
  const char* env = std::getenv("SHARDBENCH_WHEELS");
  const std::string dir = env && *env ? env : ProjectDir() + "/.wheels";
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t dash = name.find('-');
    if (dash == std::string::npos || name.size() < 4 || name.substr(name.size() - 4) != ".whl") continue;
    std::string dist = name.substr(0, dash);
    for (char& ch : dist) ch = ch == '_' ? '-' : static_cast<char>(std::tolower(ch));
    if (dist == package) out.push_back(name.substr(dash + 1, name.find('-', dash + 1) - dash - 1));
  }
  return out;
}

int RunBisect(const MatrixArgs& args, const std::string& out, const std::string& self_exe) {
  const std::string& package = args.bisect[0];
  ParsePeerEnv(package + "=0");  // InputError unless a package a peer environment pins
  const auto releases = ReleasesBetween(WheelhouseReleases(package), package, args.bisect[1], args.bisect[2]);
  std::string base = args.envs.empty() ? "" : args.envs[0];
  if (args.envs.size() > 1) throw InputError("matrix --bisect: at most one --env (the other packages' releases)");
  auto run = [&](const std::string& release) {
    auto spec = base.empty() || base == "project" ? std::map<std::string, std::string>{} : ParsePeerEnv(base);
    spec[package] = release;
    const Side side = MakeSide(CanonicalPeerEnv(spec), out);
    RunSide(args, side, 1, self_exe);
    return FingerprintOf(LoadResultSet(side.dir));
  };
  const BisectResult found = Bisect(releases, run);
  std::string md = "# Bisect " + package + " " + args.bisect[1] + " .. " + args.bisect[2] + ": " + args.target + "\n\n";
  std::string listed;
  for (const auto& r : releases) listed += (listed.empty() ? "" : ", ") + r;
  md += "- releases in the wheelhouse: " + listed + " (" + std::to_string(releases.size()) + ")\n";
  md += "- run (one launch each, in this order): " + Joined(found.tried, ", ") + "\n";
  if (!found.first_changed) {
    md += "- no change: " + args.bisect[1] + " and " + args.bisect[2] +
          " agree on every colour, exact metric and warning\n";
  } else {
    md += "- first change: " + package + " " + releases[*found.first_changed] + " (after " +
          releases[*found.first_changed - 1] + ")\n";
    for (const auto& ch : found.changes) md += "  - " + EscapeMarkdown(ch) + "\n";
  }
  WriteFileAtomically(out + "/bisect.md", md);
  std::fputs(md.c_str(), stdout);
  return 0;
}

}  // namespace

int MatrixCommand(const MatrixArgs& args, const std::string& self_exe) {
  const std::string out = args.out_dir.empty() ? "results/matrix-" + Timestamp() : args.out_dir;
  for (const char* report : {"matrix.md", "bisect.md"}) {
    if (fs::exists(out + "/" + report))
      throw InputError(out + ": already holds a matrix (" + report + "); give a new --out");
  }
  if (!args.bisect.empty()) return RunBisect(args, out, self_exe);
  return RunMatrix(args, out, self_exe);
}

}  // namespace shardbench::cli
