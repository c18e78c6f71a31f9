#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole GoogleTest suite through ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "${SHARDBENCH_BUILD_DIR:-$root/build}"
# Both cores (the tests run green in parallel; serially they take ~12 min of CI's 30).
ctest --output-on-failure --timeout 600 -j "${SHARDBENCH_TEST_JOBS:-$(nproc)}" "$@"
