// Where `compare` and `history` may write a report (--markdown, --junit, --html): a new file, or
// one of the same kind that shardbench wrote (a nightly job rewrites last night's dashboard),
// never anything else (a run's results, an index, a file of the user's) and never into a run
// directory, whose files belong to the run. Checked before anything is read or written.
#pragma once

#include <string>

namespace shardbench::cli {

enum class ReportKind { kMarkdown, kJUnit, kHtml };

// InputError naming `flag` when `path` is a directory, an existing file that is not a shardbench
// report of `kind`, or a path inside a run directory (one that holds index.json).
void CheckReportPath(const std::string& flag, const std::string& path, ReportKind kind);

}  // namespace shardbench::cli
