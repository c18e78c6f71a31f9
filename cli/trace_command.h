// `shardbench trace summarize RUN`: for every trace.json under RUN (a run directory, an
// instance's, a repetition's, or the file), where each rank's measured steps went
// (reporters/trace_summary.h).
#pragma once

#include <string>

namespace shardbench::cli {

int TraceSummarizeCommand(const std::string& run);

}  // namespace shardbench::cli
