#include "cli/run_command.h"

#include <unistd.h>

#include "cli/summary.h"

namespace shardbench::cli {

int RunCommand(const RunArgs& args, const std::string& self_exe) {
  const RunDisplay display{ProgressPrinter(isatty(STDOUT_FILENO)), PrintSummary, args.quiet ? PrintUnexpected : PrintIndex};
  return RunTarget(args, display, self_exe);
}

int RankCommand(const RunArgs& args) {
  const RunDisplay display{ProgressPrinter(isatty(STDOUT_FILENO)), PrintSummary, args.quiet ? PrintUnexpected : PrintIndex};
  return RunRepetitionRank(args, display);
}

}  // namespace shardbench::cli
