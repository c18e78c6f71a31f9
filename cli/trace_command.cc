#include "cli/trace_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/profile/torch_profiler_trace.h"
#include "engine/profile/trace_events.h"
#include "reporters/trace_summary.h"

namespace shardbench::cli {
namespace fs = std::filesystem;

namespace {

// A peer repetition's timelines: trace.rank<N>.json, one torch.profiler trace a rank.
std::vector<profile::RankSpans> PeerTimelines(const fs::path& first) {
  std::vector<profile::RankSpans> ranks;
  for (int r = 0;; ++r) {
    const fs::path path = first.parent_path() / ("trace.rank" + std::to_string(r) + ".json");
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) break;
    std::ifstream in(path);
    nlohmann::json trace = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (trace.is_discarded()) throw InputError(path.string() + ": not JSON");
    ranks.push_back(profile::ReadTorchProfilerTrace(trace, r, path.string()));
  }
  return ranks;
}

}  // namespace

int TraceSummarizeCommand(const std::string& run) {
  std::vector<fs::path> traces;
  std::error_code ec;
  if (fs::is_regular_file(run, ec)) {
    traces.push_back(run);
  } else if (fs::is_directory(run, ec)) {
    for (auto it = fs::recursive_directory_iterator(run, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      // Ours: trace.json (every rank); a peer's: trace.rank0.json stands for its repetition's ranks.
      if (it->is_regular_file() && (name == "trace.json" || name == "trace.rank0.json")) traces.push_back(it->path());
    }
    if (ec) throw InputError("trace summarize " + run + ": cannot read it all: " + ec.message());
    std::sort(traces.begin(), traces.end());
  } else {
    throw InputError("trace summarize " + run + ": no such file or directory");
  }
  if (traces.empty()) {
    throw InputError("trace summarize " + run + ": no trace.json (ours) or trace.rank0.json (a peer's) under it (run "
                     "with --trace, or profile.trace: true)");
  }
  for (const fs::path& path : traces) {
    const std::string shown = path == fs::path(run) ? path.string() : fs::relative(path, run).string();
    if (path.filename().string().rfind("trace.rank", 0) == 0) {
      std::printf("%s (a peer's, one torch.profiler trace a rank)\n%s\n", shown.c_str(),
                  FormatTraceSummary(SummarizeTrace(PeerTimelines(path))).c_str());
      continue;
    }
    std::ifstream in(path);
    nlohmann::json trace = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (trace.is_discarded()) throw InputError(path.string() + ": not JSON");
    std::printf("%s\n%s\n", shown.c_str(), FormatTraceSummary(SummarizeTrace(profile::ReadTraceEvents(trace, path.string()))).c_str());
  }
  return 0;
}

}  // namespace shardbench::cli
