#!/usr/bin/env bash
# Benchmark (not a test): the smoke scenario on 1 node x 4 ranks against 2 "nodes" x 2 ranks
# (network namespaces joined by a veth pair, scripts/netns-nodes.sh), ROUNDS launches a side,
# alternated so that both sides see the same machine. Prints per launch and as medians: step
# time, busy time (step time minus time blocked in collectives), the blocked time, and the time
# inside collectives per step. Needs root; both sides run over Gloo on this one machine's cores,
# so the veth's cost is what differs, not a real network's.
#   scripts/bench-two-nodes.sh [ROUNDS] [OVERRIDES...]     (defaults: 3 rounds, train.steps=40)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/shardbench
rounds=${1:-3}; shift || true
overrides=("$@"); [ ${#overrides[@]} -gt 0 ] || overrides=(train.steps=40)
source "$src/scripts/netns-nodes.sh"
netns_nodes_possible || { echo "needs root and iproute2 (ip netns)" >&2; exit 2; }
netns_nodes_up bench$$
out=$(mktemp -d /tmp/bench-two-nodes.XXXXXX)
scenario=$src/scenarios/smoke.yaml
for r in $(seq 1 "$rounds"); do
  "$bin" run "$scenario" --nproc 4 --quiet --out "$out/1x4-$r" world_size=4 "${overrides[@]}" >/dev/null
  pids=()
  for i in 0 1; do
    on $i "$bin" run "$scenario" --nnodes 2 --node-rank $i --nproc-per-node 2 --master-addr "${addr[0]}" \
      --master-port $((29800 + r)) --quiet --out "$out/2x2-$r" world_size=4 "${overrides[@]}" >/dev/null & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
done
python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def figures(d):
    r = json.load(open(os.path.join(d, "smoke.json")))
    m = {x["name"]: x for x in r["metrics"]}
    steps = len(r["loss"]) - r["measured_from_step"]
    coll = sum(x["median"] for n, x in m.items() if n.startswith("comm_") and n.endswith("_time")) / steps
    step, busy = m["step_time"]["median"], m["step_time_busy"]["median"]
    return {"step": step, "busy": busy, "blocked": step - busy, "in_collectives": coll}
sides = {s: [figures(os.path.join(out, f"{s}-{i}")) for i in range(1, rounds + 1)] for s in ("1x4", "2x2")}
print(f"smoke, 4 ranks over Gloo, {rounds} launches a side (ms per step, medians over the measured steps)")
for side, launches in sides.items():
    for i, f in enumerate(launches, 1):
        print(f"  {side} launch {i}: " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in f.items()))
med = {s: {k: statistics.median(f[k] for f in l) for k in l[0]} for s, l in sides.items()}
for k in med["1x4"]:
    print(f"{k:>15}: 1x4 {med['1x4'][k] * 1e3:.2f} ms, 2x2 {med['2x2'][k] * 1e3:.2f} ms, ratio {med['2x2'][k] / med['1x4'][k]:.2f}")
print(f"results under {out}")
PY
