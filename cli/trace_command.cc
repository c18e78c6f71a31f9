#include "cli/trace_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/profile/trace_events.h"
#include "reporters/trace_summary.h"

namespace shardbench::cli {
namespace fs = std::filesystem;

int TraceSummarizeCommand(const std::string& run) {
  std::vector<fs::path> traces;
  std::error_code ec;
  if (fs::is_regular_file(run, ec)) {
    traces.push_back(run);
  } else if (fs::is_directory(run, ec)) {
    for (auto it = fs::recursive_directory_iterator(run, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file() && it->path().filename() == "trace.json") traces.push_back(it->path());
    }
    if (ec) throw InputError("trace summarize " + run + ": cannot read it all: " + ec.message());
    std::sort(traces.begin(), traces.end());
  } else {
    throw InputError("trace summarize " + run + ": no such file or directory");
  }
  if (traces.empty()) {
    throw InputError("trace summarize " + run + ": no trace.json under it (run with --trace, or profile.trace: true)");
  }
  for (const fs::path& path : traces) {
    std::ifstream in(path);
    nlohmann::json trace = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (trace.is_discarded()) throw InputError(path.string() + ": not JSON");
    const std::string shown = path == fs::path(run) ? path.string() : fs::relative(path, run).string();
    std::printf("%s\n%s\n", shown.c_str(), FormatTraceSummary(SummarizeTrace(profile::ReadTraceEvents(trace, path.string()))).c_str());
  }
  return 0;
}

}  // namespace shardbench::cli
