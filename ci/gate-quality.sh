#!/usr/bin/env bash
# How good is the gate, and does it know? A measurement, not a test: minutes of launches, figures
# that depend on the machine (report them with the machine). Two modes (ci/gate_quality.py says
# exactly what each does):
#
#   ci/gate-quality.sh slowdowns [--rounds 20] [--scenario FILE] [--auto-trials K] [--pool DIR] [-- key=value ...]
#       false alarms, detection of 5/10/20% slowdowns at 10 and 5 launches a side, the minimum
#       detectable effect the gate reported for those comparisons and whether it predicted the
#       detection; with --auto-trials, launches used by --repetitions auto --target-mde 0.10.
#   ci/gate-quality.sh aa-suite [--suite nightly] [--launches 10] [--reps 5] [--pool DIR]
#       A/A over a whole suite, every metric: the family-wise false-alarm rate with the policy's
#       multiple-testing correction.
#
# e.g. the README's figures: ci/gate-quality.sh slowdowns --rounds 10 -- world_size=2 model=tiny
#      ci/gate-quality.sh slowdowns --rounds 10 --scenario scenarios/smoke.yaml -- world_size=1 model=125m
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: ci/gate-quality.sh slowdowns|aa-suite [options] [-- overrides]}
shift
args=() overrides=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; overrides=("$@"); break; fi
  args+=("$1"); shift
done
exec python3 "$root/ci/gate_quality.py" "$mode" "${args[@]}" -- "${overrides[@]}"
