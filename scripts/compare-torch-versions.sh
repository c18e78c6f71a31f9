#!/usr/bin/env bash
# A torch version gate for the PyTorch peer: the same scenario on two torch releases (each in the
# environment `peer.env: torch=VERSION` names, from the wheelhouse; "project" = the project's
# .venv), repeated, then `shardbench compare OLD NEW`. Loud: an environment that cannot be built,
# or a peer that imported another torch than asked, stops the gate (exit 3); a red instance does
# not (it is what the comparison reports).
#   scripts/compare-torch-versions.sh OLD NEW [REPETITIONS] [SCENARIO] [-- overrides...]
#   scripts/compare-torch-versions.sh 2.10.0 project 5 scenarios/peers_tiny.yaml -- engine=torch_fsdp2 lora.enabled=true
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old=${1:?usage: compare-torch-versions.sh OLD NEW [REPETITIONS] [SCENARIO] [-- overrides]}
new=${2:?usage: compare-torch-versions.sh OLD NEW [REPETITIONS] [SCENARIO] [-- overrides]}
shift 2
reps=${1:-5}; [ $# -gt 0 ] && shift
scenario=${1:-$root/scenarios/peers_tiny.yaml}; [ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
overrides=("$@")
[ ${#overrides[@]} -gt 0 ] || overrides=(engine=torch_fsdp2 lora.enabled=true)
bin=${SHARDBENCH_BIN:-$root/build/shardbench}
out=${SHARDBENCH_OUT:-$root/results/torch-versions-$(date -u +%Y%m%d-%H%M%S)}
[ "$old" != "$new" ] || { echo "compare-torch-versions: both sides are '$old': not a version comparison" >&2; exit 2; }
for side in old new; do
  version=${!side}
  env=(); [ "$version" = project ] && env=(peer.python=project) || env=("peer.env=torch=$version")
  status=0
  "$bin" run "$scenario" --quiet --repetitions "$reps" --out "$out/$side" "${overrides[@]}" "${env[@]}" || status=$?
  [ $status -le 1 ] || { echo "compare-torch-versions: the $side side (torch $version) did not run (exit $status)" >&2; exit $status; }
done
"$bin" compare "$out/old" "$out/new" --markdown "$out/compare.md" --html "$out/compare.html"
