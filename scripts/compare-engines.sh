#!/usr/bin/env bash
# Runs one scenario under several engine settings, alternating them for a number of rounds
# (so machine drift hits all alike), and prints median tokens/s, step time (and its ratio to the
# first variant's, launch by launch), the overlap figures and per-rank memory side by side. A measurement, not a test. SHARDBENCH_BIN runs another binary (e.g. a copy, so
# the build tree can be rebuilt meanwhile).
#
#   scripts/compare-engines.sh SCENARIO ROUNDS "OVERRIDES A" "OVERRIDES B" ... -- [COMMON OVERRIDES]
# e.g.
#   scripts/compare-engines.sh scenarios/smoke.yaml 3 "engine=reference" "engine=flat" -- lora.enabled=false
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scenario=$1 rounds=$2
shift 2
variants=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do variants+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
common=("$@")
out=$(mktemp -d)
for ((r = 0; r < rounds; r++)); do
  for i in "${!variants[@]}"; do
    # shellcheck disable=SC2206
    extra=(${variants[$i]})
    # Exit 1 (a failed check, e.g. the loss did not drop in a short run) still measured.
    rc=0
    "${SHARDBENCH_BIN:-$root/build/shardbench}" run "$scenario" --quiet --out "$out/v$i-r$r" "${common[@]}" "${extra[@]}" >/dev/null || rc=$?
    [ "$rc" -le 1 ] || { echo "compare-engines: '${variants[$i]}' failed with exit $rc" >&2; exit "$rc"; }
  done
done
python3 - "$out" "$rounds" "${variants[@]}" <<'PY'
import json, statistics, sys, glob, os
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = []  # per variant, per round: {metric: result metric}
for i in range(len(variants)):
    rows.append([])
    for r in range(rounds):
        f = glob.glob(os.path.join(out, f"v{i}-r{r}", "*.json"))[0]
        rows[i].append({x["name"]: x for x in json.load(open(f))["metrics"]})
print(f"{rounds} launches of each variant, alternating; medians over launches (each launch's own median)")
print(f"{'variant':58} {'tok/s':>9} {'step ms':>8} {'step/first [min-max]':>21} {'overlap':>7} {'exposed ms':>10} "
      f"{'params MiB':>10} {'grads MiB':>9} {'optim MiB':>9} {'unsh.peak MiB':>13} {'RSS MiB':>8}")
for i, v in enumerate(variants):
    med = lambda k: statistics.median(x[k]["median"] for x in rows[i]) if k in rows[i][0] else float("nan")
    mib = lambda k: med(k) / 2**20
    # Round r of this variant over round r of the first (launched next to each other).
    ratios = [rows[i][r]["step_time"]["median"] / rows[0][r]["step_time"]["median"] for r in range(rounds)]
    ratio = f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]"
    print(f"{v:58} {med('tokens_per_s'):9.0f} {med('step_time')*1e3:8.1f} {ratio:>21} {med('comm_overlap_ratio'):7.3f} "
          f"{med('comm_exposed_time')*1e3:10.1f} {mib('param_bytes'):10.2f} {mib('grad_bytes'):9.2f} "
          f"{mib('optim_state_bytes'):9.2f} {mib('params_unsharded_peak_bytes'):13.2f} {mib('host_rss_peak'):8.0f}")
PY
rm -rf "$out"
