// Multi-rank tests written where they are read: the assertions beside the setup, in the test.
//
//   TEST(MixedPrecision, Bf16HalvesTheGathers) {
//     testing::RunOnRanks(2, [](comm::Communicator* comm) { ... EXPECT_EQ(...); });
//   }
//
// In the test process RunOnRanks launches `nproc` copies of this test binary through the same
// launcher `shardbench run --nproc` uses (engine/comm/process_launcher.h), each running only
// the current test (--gtest_filter) as one rank. In those copies it runs `body` with the rank's
// communicator (null at world size 1); any EXPECT that fails on a rank fails that rank's
// process, and the test fails naming it, with every rank's log. Parameterised tests work too:
// each copy runs the same instance, so GetParam() agrees across ranks.
#pragma once

#include <functional>

#include "engine/comm/communicator.h"
#include "engine/comm/process_launcher.h"

namespace shardbench::testing {

void RunOnRanks(int nproc, const std::function<void(comm::Communicator* comm)>& body, comm::LaunchSpec spec = {});

}  // namespace shardbench::testing
