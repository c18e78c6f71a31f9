#!/usr/bin/env bash
# The nightly performance gate. Runs a suite (default: nightly) with enough repetitions for
# the statistical gate, stores the run under a history directory, compares it with a baseline
# (default: the previous run in the history), writes the reports, and exits with the gate's
# code: 0 green, 1 not green (RED: a regression or failed check; UNJUDGED: a gated metric with
# too few samples; UNDERPOWERED: a gate that could not have caught the policy's max_mde),
# 2 bad input, 3 infrastructure.
#
#   ci/nightly.sh [--suite NAME|FILE] [--history DIR] [--baseline DIR] [--policy FILE]
#                 [--reports DIR] [--repetitions N (10)|auto[:MAX]] [--target-mde X]
#                 [--checks SUITE[,SUITE] (upstream)|none] [-- key=value overrides]
#
# --checks: correctness suites run once each after the performance suite (default `upstream`:
# the upstream pains on PyTorch's FSDP at the pinned versions, each instance with its expected
# colour). An instance out of its expected colour makes the night not green (exit 1) whatever the
# gate says; their runs go to <reports>/checks-<run>/<suite> (not the history: they are not compared).
#
# Every rank is pinned to its share of the cores (timing.pin_cores=true, before the overrides
# given after --, so `-- timing.pin_cores=false` turns it off): on the 2-core CI VM it cut the
# launch-to-launch spread of tokens/s from 12.9% to 8.0% (README "Gate quality").
#
# --repetitions auto:MAX --target-mde 0.10 adds launches of each instance until the policy's
# gated metrics are pinned to 10% (or MAX launches), instead of a fixed count.
#
# Reports (in --reports, default reports/): compare.md (the PR/issue comment), junit.xml (the
# CI test view), dashboard.html (the comparison, memory, loss curves and every metric's trend
# with its change points), history.md and history.html (every metric's trend, alerts first),
# and tonight's figures as export.{gbench,bencher,gab-smaller,
# gab-bigger}.json. The first night has no baseline: it records, exports and exits.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SHARDBENCH_BIN:-$root/build/shardbench}
suite=nightly history=${SHARDBENCH_HISTORY:-$root/history} baseline="" reports=reports repetitions=10 target_mde=""
checks=upstream
policy=$root/ci/nightly-policy.yaml
overrides=(timing.pin_cores=true)
while [ $# -gt 0 ]; do
  case $1 in
    --suite) suite=$2; shift 2 ;;
    --history) history=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --policy) policy=$2; shift 2 ;;
    --reports) reports=$2; shift 2 ;;
    --repetitions) repetitions=$2; shift 2 ;;
    --target-mde) target_mde=$2; shift 2 ;;
    --checks) checks=$2; shift 2 ;;
    --) shift; overrides+=("$@"); break ;;
    *) echo "ci/nightly.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "ci/nightly.sh: $bin not built (run scripts/build.sh)" >&2; exit 2; }
mkdir -p "$history" "$reports"

# The baseline: the newest run already in the history (before tonight's).
if [ -z "$baseline" ]; then
  baseline=$(find "$history" -mindepth 1 -maxdepth 1 -type d -name 'run-*' | sort | tail -n 1)
fi
run_dir=$history/run-$(date -u +%Y%m%dT%H%M%SZ)-$$

# Exit 1 (a check failed) is for the gate to report; 2 and 3 stop here.
rc=0
adaptive=()
[ -n "$target_mde" ] && adaptive=(--target-mde "$target_mde" --policy "$policy")
"$bin" run "$suite" --out "$run_dir" --repetitions "$repetitions" "${adaptive[@]}" --quiet "${overrides[@]}" || rc=$?
if [ "$rc" -ge 2 ]; then
  echo "ci/nightly.sh: the suite could not run (exit $rc); see $run_dir" >&2
  exit "$rc"
fi

# The correctness suites: once each, their expected colours held (exit 1 when one is not).
checks_rc=0 checks_dir=$reports/checks-$(basename "$run_dir")
if [ "$checks" != none ]; then
  for check_suite in ${checks//,/ }; do
    crc=0
    "$bin" run "$check_suite" --out "$checks_dir/$check_suite" --quiet || crc=$?
    if [ "$crc" -ge 2 ]; then
      echo "ci/nightly.sh: the correctness suite $check_suite could not run (exit $crc); see $checks_dir/$check_suite" >&2
      exit "$crc"
    fi
    if [ "$crc" -ne 0 ]; then
      echo "ci/nightly.sh: correctness suite $check_suite: an instance is not in its expected colour; see $checks_dir/$check_suite" >&2
      checks_rc=1
    fi
  done
fi

# Tonight's figures for other tools, every night (reporters/benchmark_export.h): Google Benchmark
# JSON, Bencher Metric Format, github-action-benchmark's two lists.
for format in gbench bencher gab-smaller gab-bigger; do
  "$bin" export "$run_dir" --format "$format" >"$reports/export.$format.json" 2>>"$reports/export.log"
done

if [ -z "$baseline" ]; then
  # Nothing was judged tonight: say so plainly (the run's own checks still set the exit code).
  echo "ci/nightly.sh: baseline recorded in $run_dir (first night: nothing to compare with, no metric judged)"
  [ "$rc" -ne 0 ] && exit "$rc"
  exit "$checks_rc"
fi
gate=0
"$bin" compare "$baseline" "$run_dir" --policy "$policy" --markdown "$reports/compare.md" \
  --junit "$reports/junit.xml" --html "$reports/dashboard.html" --history "$history" || gate=$?
"$bin" history "$history" --markdown "$reports/history.md" --html "$reports/history.html" --policy "$policy" \
  >/dev/null || true  # informational
[ "$gate" -ne 0 ] && exit "$gate"
exit "$checks_rc"
