#!/usr/bin/env bash
# Fuzzes every parser of outside input with libFuzzer, ASan and UBSan (tests/fuzz/).
#
#   scripts/fuzz.sh [--corpus] [SECONDS] [TARGET...]    SECONDS per target (default 60); every target by default
#
# --corpus also runs the malformed-input corpus (tests/malformed/) against this build's
# shardbench, so every case runs under ASan and UBSan too (what CI does, with 5 s per target).
#
# Builds build-fuzz/ with clang (scripts/apt-packages.txt installs it), replays the inputs that
# once failed (tests/fuzz/regressions/<target>/: each must now pass), then fuzzes each target
# for SECONDS from its seeds (tests/fuzz/corpus/<target>/, and the shipped scenarios) and from
# what earlier runs found (build-fuzz/corpus/<target>/, kept between runs). Prints a line per
# target: inputs executed, coverage (edges, features) and corpus size. Exit 1 when an input
# crashes, hangs, leaks, hits undefined behaviour or throws anything but InputError; the input
# is saved under build-fuzz/findings/<target>/ (add it to tests/fuzz/regressions/ with the fix).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"  # the suite seeds name scenarios as /proc/self/cwd/scenarios/*.yaml
corpus=0
if [ "${1:-}" = --corpus ]; then corpus=1; shift; fi
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario suite gate_policy results safetensors token_file)
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }

"$root/scripts/setup.sh"
build=${SHARDBENCH_FUZZ_BUILD_DIR:-$root/build-fuzz}
# Only the parsers of outside input and the CLI are compiled there, instrumented; the rest is the
# main build's libraries, linked as they are (cmake/LinkedLibraries.cmake): built first here.
main=${SHARDBENCH_BUILD_DIR:-$root/build}
if [ -f "$main/build.ninja" ]; then
  cmake --build "$main" --parallel "${SHARDBENCH_JOBS:-$(nproc)}" --target shardbench_harness
else
  "$root/scripts/build.sh"
fi
main_cuda=$(sed -n 's/^SHARDBENCH_CUDA:[A-Z]*=//p' "$main/CMakeCache.txt")
# -O0 with line tables only: sanitizer reports keep file:line, and the cold build (every CI run's,
# ~40% faster than -O1) is what CI waits for. Long local runs fuzz more inputs a second at -O1:
# SHARDBENCH_FUZZ_FLAGS="-O1 -gline-tables-only -DNDEBUG" with a new SHARDBENCH_FUZZ_BUILD_DIR.
if ! grep -qx "SHARDBENCH_LINK_BUILD:PATH=$main" "$build/CMakeCache.txt" 2>/dev/null; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"  # a build of the other kind; its corpus/ is kept
  flags=${SHARDBENCH_FUZZ_FLAGS:-"-O0 -gline-tables-only -DNDEBUG"}
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDBENCH_FUZZ=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DSHARDBENCH_LINK_BUILD="$main" \
    -DSHARDBENCH_CUDA="${main_cuda:-AUTO}" -DSHARDBENCH_BUILD_TESTS=OFF -DSHARDBENCH_BUILD_BENCHMARKS=OFF \
    >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
fi
binaries=("${targets[@]/#/fuzz_}")
[ $corpus = 0 ] || binaries+=(shardbench)
cmake --build "$build" --parallel "${SHARDBENCH_JOBS:-$(nproc)}" --target "${binaries[@]}"

# Leaks are findings too (ASan checks for them after each input and at exit).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target per core at a time (each fuzzer is one process on one core): CI waits for the slowest.
fuzz_one() {  # $1: target; prints its line, returns 1 on a finding
  local t=$1 fuzzer="$build/fuzz_$1" log="$build/fuzz_$1.log"
  local regressions=(tests/fuzz/regressions/"$t"/*)
  if [ -e "${regressions[0]}" ]; then
    "$fuzzer" "${regressions[@]}" >"$build/fuzz_$t.regressions.log" 2>&1 ||
      { echo "fuzz $t: a regression input fails again (see $build/fuzz_$t.regressions.log)"; return 1; }
  fi
  mkdir -p "$build/corpus/$t" "$build/findings/$t"
  local seeds=(tests/fuzz/corpus/"$t")
  [ "$t" = scenario ] && seeds+=(scenarios)
  local options=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1
                 -artifact_prefix="$build/findings/$t/")
  if [ "$t" = scenario ] || [ "$t" = suite ]; then options+=(-dict=tests/fuzz/yaml.dict); fi
  if "$fuzzer" "${options[@]}" "$build/corpus/$t" "${seeds[@]}" >"$log" 2>&1; then
    local done_line execs
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz $t: ${execs:-?} inputs in ${seconds} s; ${done_line#*DONE   }"
  else
    echo "fuzz $t: FINDING (last lines of $log; the input is in $build/findings/$t/):"
    grep -E 'ERROR|SUMMARY|terminate|what\(\)|runtime error|Test unit written' "$log" | head -8 | sed 's/^/  /'
    return 1
  fi
}
failed=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "${SHARDBENCH_JOBS:-$(nproc)}" ]; do wait -n || true; done
  rm -f "$build/fuzz_$t.status"
  { if fuzz_one "$t" >"$build/fuzz_$t.line"; then echo 0; else echo 1; fi >"$build/fuzz_$t.status"; } &
done
wait
for t in "${targets[@]}"; do
  cat "$build/fuzz_$t.line"
  [ "$(cat "$build/fuzz_$t.status" 2>/dev/null)" = 0 ] || failed+=("$t")
done
if [ $corpus = 1 ]; then
  # Memory errors and undefined behaviour on every case; leaks are the fuzzers' to find (every
  # input above is leak-checked). A corpus case is a whole process loading LibTorch under ASan:
  # LeakSanitizer's scan at exit costs ~1 s of its ~3 s here, recording every allocation's stack
  # ~0.4 s. Without both, a finding's report lacks the allocation's stack (rerun the case with
  # SHARDBENCH_CORPUS_LEAKS=1, which keeps both, for it).
  ASAN_OPTIONS=$ASAN_OPTIONS$([ "${SHARDBENCH_CORPUS_LEAKS:-0}" = 1 ] || echo ":detect_leaks=0:malloc_context_size=0") \
    "$root/.venv/bin/python" tests/malformed/run_corpus.py "$build/shardbench" "$root" "$build/malformed" ||
    failed+=("malformed-input corpus")
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}"
  exit 1
fi
echo "fuzz: no findings in ${targets[*]}$([ $corpus = 0 ] || echo ', nor in the malformed-input corpus')"
