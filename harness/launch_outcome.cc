#include "harness/launch_outcome.h"

#include <exception>
#include <filesystem>

#include "engine/common/error.h"

namespace shardbench {

LaunchOutcome OutcomeOf(const std::function<LaunchOutcome()>& attempt) {
  try {
    return attempt();
  } catch (const Error& e) {
    return {static_cast<int>(e.code()), e.what()};
  } catch (const std::filesystem::filesystem_error& e) {  // classified by its errno, as cli/main.cc does
    return {static_cast<int>(FileErrorCode(e.code().value())), e.what()};
  } catch (const std::exception& e) {  // not one of our errors (collectives throw InfraError): our bug
    return {static_cast<int>(ExitCode::kInfra), std::string("internal error: ") + e.what()};
  }
}

}  // namespace shardbench
