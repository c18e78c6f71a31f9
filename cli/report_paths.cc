#include "cli/report_paths.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/common/error.h"

namespace shardbench::cli {
namespace {

namespace fs = std::filesystem;

// What each report starts with (reporters/compare_reports.cc, history.cc, engine_pairs.cc,
// dashboard_template.html), looked for in its first 4 KiB.
std::vector<std::string> Markers(ReportKind kind) {
  switch (kind) {
    case ReportKind::kMarkdown:
      return {"### shardbench ", "## Engines side by side"};
    case ReportKind::kJUnit:
      return {"<testsuite name=\"shardbench"};
    case ReportKind::kHtml:
      return {"<title>shardbench"};
  }
  return {};
}

bool IsOurReport(const std::string& path, ReportKind kind) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  for (const auto& marker : Markers(kind)) {
    if (head.find(marker) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

void CheckReportPath(const std::string& flag, const std::string& path, ReportKind kind) {
  if (path.empty()) return;
  std::error_code ec;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (fs::exists(dir / "index.json", ec)) {
    throw InputError(flag + " " + path + ": " + dir.string() +
                     " is a run directory (it holds index.json); its files "
                     "are the run's: write the report elsewhere");
  }
  if (fs::is_directory(p, ec)) throw InputError(flag + " " + path + ": is a directory; name a file");
  if (fs::exists(p, ec) && !IsOurReport(path, kind)) {
    throw InputError(flag + " " + path +
                     ": already exists and is not a shardbench report of this kind; it is left as "
                     "it is (choose a new file)");
  }
}

}  // namespace shardbench::cli
