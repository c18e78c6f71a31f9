// How one repetition ended, as its launcher records it, and the one place an exception becomes
// such an outcome: our errors (engine/common/error.h) keep their exit code and words; a path the
// filesystem refused is classified by its errno (FileErrorCode); any other exception is our own
// bug, reported as "internal error" with infrastructure's code, as cli/main.cc reports them.
#pragma once

#include <functional>
#include <string>

namespace shardbench {

struct LaunchOutcome {
  int exit_code = 0;  // of the repetition: 0 ok, 1 a check failed, 2 input, 3 infra
  std::string message;
};

// `attempt`'s outcome, or the outcome of the exception it threw.
LaunchOutcome OutcomeOf(const std::function<LaunchOutcome()>& attempt);

}  // namespace shardbench
