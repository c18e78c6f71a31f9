#!/usr/bin/env bash
# How good is the gate, and does it know? A measurement, not a test: minutes of launches, figures
# that depend on the machine (report them with the machine). Two modes (ci/gate_quality.py says
# exactly what each does; ci/gate_quality_instructions.py and ci/gate_quality_spread.py the last two):
#
#   ci/gate-quality.sh slowdowns [--rounds 20] [--scenario FILE] [--planted step|optimizer|collectives]
#                                [--percents 5,10,20] [--sides 10,5] [--metric M] [--paired-only]
#                                [--auto-trials K] [--pool DIR] [-- key=value ...]
#       false alarms, detection of 5/10/20% slowdowns (failpoints slow_<planted>_*pct: spinning
#       after the step's loss read, CPU work inside AdamW, or on Gloo's thread before each
#       collective) at each --sides launches a side, unpaired and paired by round (compare
#       --paired), the minimum detectable effect the gate reported for those comparisons and
#       whether it predicted the detection; with --auto-trials, launches used by
#       --repetitions auto --target-mde 0.10.
#   ci/gate-quality.sh instructions [--launches 6] [--planted-launches 5] [--tolerance 0.01] [--pool DIR] [-- ...]
#       instructions_per_step under callgrind: its A/A spread, what the planted CPU-bound
#       slowdowns (and a sleeping straggler) do to it, and 20 comparisons per case at --tolerance.
#   ci/gate-quality.sh spread [--rounds 20] [--pool DIR] [-- key=value ...]
#       launch-to-launch spread and the MDE it implies for each timing variant (timing.pin_cores,
#       timing.calibrate) and each per-launch estimator (median, fast quantiles, calibrated).
#   ci/gate-quality.sh aa-suite [--suite nightly] [--launches 10] [--reps 5] [--pool DIR]
#       A/A over a whole suite, every metric: the family-wise false-alarm rate with the policy's
#       multiple-testing correction.
#
# e.g. the README's figures: ci/gate-quality.sh slowdowns --rounds 10 -- world_size=2 model=tiny
#      ci/gate-quality.sh slowdowns --rounds 10 --scenario scenarios/smoke.yaml -- world_size=1 model=125m
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: ci/gate-quality.sh slowdowns|aa-suite|instructions|spread [options] [-- overrides]}
shift
args=() overrides=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; overrides=("$@"); break; fi
  args+=("$1"); shift
done
exec python3 "$root/ci/gate_quality.py" "$mode" "${args[@]}" -- "${overrides[@]}"
