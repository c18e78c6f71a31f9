#!/usr/bin/env bash
# The weekly release matrix users drop into CI beside the nightly gate (ci/github-weekly-matrix.yml):
# every chain of ci/release-matrix.txt on the targets (peers_tiny and the upstream suite), each side
# a peer environment built from the wheelhouse, neighbours judged by the gate
# (`shardbench matrix`), everything in one directory with a combined report.
#   ci/matrix.sh [--out DIR] [--repetitions N] [--targets "peers_tiny upstream"] [--offline]
# Without --offline it first fills .wheels/ (scripts/fetch-wheels.sh); with it, the wheelhouse
# must already hold every side (carried from a machine with a registry).
# Exit: 0 every comparison green; 1 a comparison not green (a regression, a failed check, a
# gate that could not judge); 2 bad input; 3 a side that could not be built or ran other releases.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=results/release-matrix-$(date -u +%Y%m%d-%H%M%S)
repetitions=3
targets="peers_tiny upstream"
offline=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --repetitions) repetitions=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --offline) offline=1; shift ;;
    *) echo "ci/matrix.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
bin=${SHARDBENCH_BIN:-$root/build/shardbench}
mapfile -t chains < <(grep -vE '^\s*(#|$)' "$root/ci/release-matrix.txt")
if [ "$offline" = 0 ]; then
  # shellcheck disable=SC2046
  "$root/scripts/fetch-wheels.sh" $(printf '%s\n' "${chains[@]}" | tr ' ' '\n' | grep -v '^project$' | sort -u)
fi
mkdir -p "$out"
status=0
report="$out/report.md"
echo "# Release matrix ($(date -u +%Y-%m-%d), $repetitions launches a side)" > "$report"
for target in $targets; do
  for chain in "${chains[@]}"; do
    name=$(echo "$chain" | sed 's/ /_/g; s/[=,]/-/g')
    envs=(); for side in $chain; do envs+=(--env "$side"); done
    rc=0
    "$bin" matrix "$target" "${envs[@]}" --repetitions "$repetitions" --out "$out/$target/$name" || rc=$?
    [ $rc -le 1 ] || { echo "ci/matrix.sh: $target, $chain: exit $rc (a side did not run): stopped" >&2; exit $rc; }
    [ $rc -eq 0 ] || status=1
    { echo; echo "# $target: $chain"; echo; sed 1d "$out/$target/$name/matrix.md"; } >> "$report"
  done
done
echo "ci/matrix.sh: $report"
exit $status
