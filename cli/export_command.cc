#include "cli/export_command.h"

#include <cstdio>
#include <filesystem>

#include "engine/common/durable_file.h"
#include "engine/common/error.h"
#include "reporters/benchmark_export.h"

namespace shardbench::cli {

int ExportCommand(const ExportArgs& args) {
  const auto format = ParseExportFormat(args.format);
  if (!format) throw InputError("export --format " + args.format + ": expected one of " + ExportFormatNames());
  // Nothing already written is overwritten.
  if (!args.out.empty() && std::filesystem::exists(args.out)) {
    throw InputError("export --out " + args.out + ": already exists; choose a new file");
  }
  const Export exported = ExportResults(LoadResultSet(args.run), *format);
  const std::string text = exported.document.dump(2) + "\n";
  if (args.out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    try {
      WriteFileAtomically(args.out, text);
    } catch (const std::exception& e) {
      throw InfraError("export: writing " + args.out + ": " + e.what());
    }
  }
  // Said on stderr, so that stdout stays the document.
  for (const std::string& why : exported.left_out) std::fprintf(stderr, "export: left out %s\n", why.c_str());
  return 0;
}

}  // namespace shardbench::cli
