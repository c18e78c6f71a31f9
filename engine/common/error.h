// Errors that cross layer boundaries. Each carries the exit code of its kind
// (docs/architecture.md, "Exit codes"), so the CLI maps any failure to 1/2/3 without guessing from message text.
#pragma once

#include <stdexcept>
#include <string>

namespace shardbench {

enum class ExitCode : int {
  kOk = 0,
  kRegression = 1,  // a gate or check failed
  kBadInput = 2,    // usage, scenario, checkpoint or CLI input is wrong
  kInfra = 3,       // a rank died, a collective timed out, the store is unreachable
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad input: the message must name the file/field and say what was expected.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(ExitCode::kBadInput, message) {}
};

// Infrastructure: the message must name the rank or endpoint that failed.
class InfraError : public Error {
 public:
  explicit InfraError(const std::string& message) : Error(ExitCode::kInfra, message) {}
};

// A failed file operation by its errno: the machine's fault (disk full, quota, I/O error, out of
// memory) is infrastructure; anything else (no such directory, permission, a planted link) is
// the input's. `message` names the file and what was being done; strerror is appended.
[[noreturn]] void ThrowFileError(const std::string& message, int error_number);
// That classification alone: kInfra or kBadInput for a failed file operation's errno.
ExitCode FileErrorCode(int error_number);

}  // namespace shardbench
