// The one place an exception becomes a launch outcome (harness/launch_outcome.h): our errors keep
// their code, a filesystem refusal is classified by its errno, anything else is an internal error.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>

#include "engine/common/error.h"
#include "harness/launch_outcome.h"

namespace shardbench {
namespace {

LaunchOutcome Throwing(const std::function<void()>& f) {
  return OutcomeOf([&] {
    f();
    return LaunchOutcome{};
  });
}

TEST(LaunchOutcome, EachExceptionKeepsItsClass) {
  EXPECT_EQ(OutcomeOf([] { return LaunchOutcome{1, ""}; }).exit_code, 1);
  EXPECT_EQ(Throwing([] { throw InputError("s.yaml:3: bad"); }).exit_code, static_cast<int>(ExitCode::kBadInput));
  const LaunchOutcome missing = Throwing([] {
    throw std::filesystem::filesystem_error("open", std::make_error_code(std::errc::no_such_file_or_directory));
  });
  EXPECT_EQ(missing.exit_code, static_cast<int>(ExitCode::kBadInput));
  EXPECT_EQ(missing.message.find("internal error"), std::string::npos) << missing.message;
  EXPECT_EQ(Throwing([] {
              throw std::filesystem::filesystem_error("write", std::make_error_code(std::errc::no_space_on_device));
            }).exit_code,
            static_cast<int>(ExitCode::kInfra));
  const LaunchOutcome bug = Throwing([] { throw std::logic_error("a bug of ours"); });
  EXPECT_EQ(bug.exit_code, static_cast<int>(ExitCode::kInfra));
  EXPECT_EQ(bug.message, "internal error: a bug of ours");
}

}  // namespace
}  // namespace shardbench
