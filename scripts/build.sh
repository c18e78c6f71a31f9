#!/usr/bin/env bash
# Configures (once) and builds shardbench into build/ with Ninja, ccache and precompiled headers.
# Extra arguments go to the CMake configure step, e.g. -DSHARDBENCH_PYTHON=/opt/torch/.venv/bin/python.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SHARDBENCH_BUILD_DIR:-$root/build}
if [ ! -f "$build/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build" -G Ninja "$@" >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
  grep -E '^-- shardbench' "$build.configure.log" || true
fi
cmake --build "$build" --parallel "${SHARDBENCH_JOBS:-$(nproc)}"
