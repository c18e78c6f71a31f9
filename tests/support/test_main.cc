// main of the GoogleTest binaries: GoogleTest's own, ending through ExitWithoutStaticDestructors
// (engine/common/fast_exit.h) once every test has run and reported. A multi-rank test runs its
// body in one process of this binary per rank (tests/support/rank_test.h), and ctest starts one
// per suite, so each paid LibTorch's static destructors at exit.
#include <gtest/gtest.h>

#include "engine/common/fast_exit.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  shardbench::ExitWithoutStaticDestructors(RUN_ALL_TESTS());
}
