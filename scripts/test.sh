#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole GoogleTest suite through ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "${SHARDBENCH_BUILD_DIR:-$root/build}"
# Both cores (the tests run green in parallel; serially they take ~12 min of CI's 30).
status=0
ctest --output-on-failure --timeout 600 -j "${SHARDBENCH_TEST_JOBS:-$(nproc)}" "$@" || status=$?
# ctest runs a GoogleTest suite as one test (cmake/GTestSuites.cmake), which passes with its
# skipped tests inside: name them, with the reason GTEST_SKIP gave.
if [ -f Testing/Temporary/LastTest.log ]; then
  awk '/: Skipped$/ { getline reason } /^\[  SKIPPED \] [A-Za-z].* ms\)$/ { print "skipped: " $4 ": " reason }' \
    Testing/Temporary/LastTest.log
fi
exit $status
