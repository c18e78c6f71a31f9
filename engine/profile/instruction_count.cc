#include "engine/profile/instruction_count.h"

#include <filesystem>
#include <fstream>
#include <utility>

#include "engine/common/error.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define SHARDBENCH_HAS_CALLGRIND 1
#else
#define SHARDBENCH_HAS_CALLGRIND 0
#endif

namespace shardbench::profile {

bool RunningUnderCallgrind() {
#if SHARDBENCH_HAS_CALLGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

std::optional<double> ReadCallgrindTotal(const std::string& path) {
  std::ifstream in(path);
  // "totals:" is the dump's own total; the last dump of a run also has a "summary:" line that
  // underflows when counting was switched off mid-run, so totals is read first.
  std::optional<double> summary;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("totals:", 0) == 0) return std::stod(line.substr(7));
    if (line.rfind("summary:", 0) == 0) summary = std::stod(line.substr(8));
  }
  return summary;
}

InstructionWindow::InstructionWindow(std::string dump_prefix) : dump_prefix_(std::move(dump_prefix)) {
  if (!RunningUnderCallgrind()) {
    throw InfraError(
        "profile.instructions: this rank does not run under valgrind's callgrind (shardbench's own launcher starts "
        "it so; under torchrun or srun, start each rank as `valgrind --tool=callgrind --instr-atstart=no "
        "--callgrind-out-file=F shardbench ...` with SHARDBENCH_CALLGRIND_OUT=F)" +
        std::string(SHARDBENCH_HAS_CALLGRIND ? "" : "; this build has no valgrind headers (apt install valgrind)"));
  }
  if (dump_prefix_.empty()) {
    throw InfraError(
        "profile.instructions: SHARDBENCH_CALLGRIND_OUT is not set: it must name valgrind's "
        "--callgrind-out-file (%p for the pid), where this rank reads its counts back");
  }
}

// Instrumentation is what is switched, not collection: callgrind keeps the collection state
// per thread (CALLGRIND_TOGGLE_COLLECT on the trainer's thread leaves the communication
// library's threads uncounted), while instrumentation and zeroing act on the whole process.
// Switching it on makes valgrind retranslate the code (slowly): once per window.
void InstructionWindow::start() {
#if SHARDBENCH_HAS_CALLGRIND
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_ZERO_STATS;
#endif
  collecting_ = true;
  paused_ = false;
}

void InstructionWindow::pause() {
  if (!collecting_) return;
#if SHARDBENCH_HAS_CALLGRIND
  CALLGRIND_STOP_INSTRUMENTATION;
#endif
  collecting_ = false;
  paused_ = true;
}

// Only a window pause() stopped: a save before the window opened must not open it.
void InstructionWindow::resume() {
  if (!paused_) return;
#if SHARDBENCH_HAS_CALLGRIND
  CALLGRIND_START_INSTRUMENTATION;
#endif
  collecting_ = true;
  paused_ = false;
}

double InstructionWindow::stop() {
#if SHARDBENCH_HAS_CALLGRIND
  CALLGRIND_DUMP_STATS_AT("shardbench measured steps");
  CALLGRIND_STOP_INSTRUMENTATION;
#endif
  collecting_ = paused_ = false;
  // Valgrind numbers a process's dumps from 1: a job's rank runs instance after instance in one
  // process, each window's dump the next.
  static int dumps = 0;
  const std::string dump = dump_prefix_ + "." + std::to_string(++dumps);
  std::optional<double> total = ReadCallgrindTotal(dump);
  if (!total) throw InfraError("profile.instructions: no instruction total in callgrind's dump " + dump);
  return *total;
}

}  // namespace shardbench::profile
