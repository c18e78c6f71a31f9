// `shardbench export RUN --format gbench|bencher|gab-smaller|gab-bigger [--out FILE]`: a run's
// metrics in another benchmark tool's format (reporters/benchmark_export.h), to stdout or a new file.
#pragma once

#include <string>

namespace shardbench::cli {

struct ExportArgs {
  std::string run;     // a result file, index.json or run directory
  std::string format;  // reporters/benchmark_export.h: ParseExportFormat
  std::string out;     // "" = stdout; an existing file is refused
};

int ExportCommand(const ExportArgs& args);

}  // namespace shardbench::cli
