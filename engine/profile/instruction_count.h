// Instructions executed over a window of this process (the measured steps): a cost figure that
// does not move with the machine's load, so the gate can hold it to 1% where wall time on a
// shared 2-core runner moves by 20% (README "Gate quality"). Counted by valgrind's callgrind:
// the launcher starts each rank under `valgrind --tool=callgrind --instr-atstart=no`
// (harness/instruction_launch.h) and this window switches instrumentation on for the measured
// steps only, then dumps the counts and reads the total back. Every thread of the process is
// counted (the trainer's and the communication library's). Hardware counters are not used:
// the VMs this was built on expose none (perf stat: instructions <not supported>).
#pragma once

#include <optional>
#include <string>

namespace shardbench::profile {

// True when this process runs under valgrind and this build has valgrind's client requests.
bool RunningUnderCallgrind();

// One window of counting. Not copyable; one at a time per process.
class InstructionWindow {
 public:
  // `dump_prefix`: the --callgrind-out-file the launcher gave (valgrind's dumps are that path
  // with ".<n>" appended). Throws InfraError when the process does not run under callgrind.
  explicit InstructionWindow(std::string dump_prefix);
  InstructionWindow(const InstructionWindow&) = delete;
  InstructionWindow& operator=(const InstructionWindow&) = delete;

  void start();  // counts from zero from here
  void pause();  // a checkpoint save between measured steps is not a step's cost
  void resume();
  // Stops counting and returns the instructions counted while running (InfraError when the
  // dump cannot be read).
  double stop();

 private:
  std::string dump_prefix_;
  bool collecting_ = false;
  bool paused_ = false;
};

// The total of instructions (callgrind's event Ir) in one callgrind dump file; nullopt when the
// file has no "summary:" or "totals:" line.
std::optional<double> ReadCallgrindTotal(const std::string& path);

}  // namespace shardbench::profile
