#!/usr/bin/env bash
# A torch version gate for the PyTorch peer: the same scenario on two torch releases (each in its
# own environment from scripts/setup-peer-env.sh; "project" = the project's .venv), repeated,
# then `shardbench compare OLD NEW`: a regression between the versions is red like any other,
# and the report names the versions of each side.
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
env_for() { if [ "$1" = project ]; then echo project; else "$root/scripts/setup-peer-env.sh" "$1" >/dev/null && echo "torch-$1"; fi; }
for side in old new; do
  version=${!side}
  "$bin" run "$scenario" --quiet --repetitions "$reps" --out "$out/$side" "${overrides[@]}" "peer.python=$(env_for "$version")" || true
done
"$bin" compare "$out/old" "$out/new" --markdown "$out/compare.md" --html "$out/compare.html"
