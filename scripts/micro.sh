#!/usr/bin/env bash
# Runs every micro-benchmark (Google Benchmark programs, harness/micro/) into one new directory,
# one JSON file per program, which `shardbench compare` and `shardbench history` read like any
# run (instances "<program>/<benchmark>", e.g. engine_overhead/BM_EngineOverhead/lora:1/batch:4/seq:64).
#
#   scripts/micro.sh OUT_DIR [--benchmark_filter=REGEX ...]
#
# MICRO_REPETITIONS (default 5: what the gate's min_samples needs) and MICRO_MIN_TIME (seconds
# per repetition, default 0.5) size the run; other arguments go to every program.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/micro.sh OUT_DIR [benchmark flags]}
shift
# Nothing already written is overwritten.
[ ! -e "$out" ] || { echo "micro.sh: $out already exists; choose a new directory" >&2; exit 2; }
build=${SHARDBENCH_BUILD_DIR:-$root/build}
mkdir -p "$out"
for program in engine_overhead optimizer_bench checkpoint_bench init_bench; do
  binary="$build/shardbench_$program"
  [ -x "$binary" ] || { echo "micro.sh: $binary is not built (scripts/build.sh builds it)" >&2; exit 3; }
  "$binary" --benchmark_repetitions="${MICRO_REPETITIONS:-5}" --benchmark_min_time="${MICRO_MIN_TIME:-0.5}" \
    --benchmark_out="$out/${program%_bench}.json" --benchmark_out_format=json "$@" >"$out/${program%_bench}.log"
  # A filter that matches none of a program's benchmarks leaves its file empty: no file, then.
  if [ ! -s "$out/${program%_bench}.json" ]; then
    rm -f "$out/${program%_bench}.json"
    echo "micro: $program: no benchmark matched"
    continue
  fi
  echo "micro: $program -> $out/${program%_bench}.json"
done
