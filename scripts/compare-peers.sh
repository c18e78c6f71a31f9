#!/usr/bin/env bash
# Our engines beside PyTorch's FSDP (the peer) on one Hugging Face directory, like for like: init
# with init=meta (both sides read the same directory into their shards), for each model given.
# Each launch runs all four engines of scenarios/peers_<model>.yaml (per_param, torch_fsdp2,
# flat, torch_fsdp1) with LoRA; ROUNDS launches per model. Prints, per engine, the median over
# launches of each launch's figures with [min-max], and ours/peer ratios taken launch by launch.
# A measurement, not a test; SHARDBENCH_BIN runs another binary.
#
#   scripts/compare-peers.sh ROUNDS [MODEL ...]      (default models: tiny 125m)
#   scripts/compare-peers.sh 5 tiny 125m -- [EXTRA OVERRIDES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SHARDBENCH_BIN:-$root/build/shardbench}
rounds=${1:?usage: compare-peers.sh ROUNDS [MODEL ...] [-- OVERRIDES]}
shift
models=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do models+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
extra=("$@")
[ ${#models[@]} -gt 0 ] || models=(tiny 125m)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for model in "${models[@]}"; do
  scenario=$root/scenarios/peers_$model.yaml
  [ -f "$scenario" ] || { echo "compare-peers: no $scenario" >&2; exit 2; }
  # The Hugging Face directory both sides read: our FULL checkpoint of the scenario's model after
  # two full fine-tuning steps (config.json + model.safetensors, fp32).
  rc=0
  "$bin" run "$scenario" --quiet --out "$out/$model-hf" engine=per_param lora.enabled=false checkpoint.type=full \
    checkpoint.keep=true train.steps=2 train.warmup_steps=0 checks.loss_parity=false checks.learning=false >/dev/null || rc=$?
  [ "$rc" -eq 0 ] || { echo "compare-peers: exporting $model failed with exit $rc" >&2; exit "$rc"; }
  hf=$(dirname "$(find "$out/$model-hf" -name config.json | head -1)")
  for ((r = 0; r < rounds; r++)); do
    rc=0
    "$bin" run "$scenario" --quiet --out "$out/$model-r$r" init=meta "model=$hf" lora.enabled=true train.steps=1 \
      train.warmup_steps=1 checks.loss_parity=false checks.learning=false "${extra[@]}" >/dev/null || rc=$?
    [ "$rc" -le 1 ] || { echo "compare-peers: $model round $r failed with exit $rc" >&2; exit "$rc"; }
  done
done
python3 - "$out" "$rounds" "${models[@]}" <<'PY'
import glob, json, os, statistics, sys
out, rounds, models = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
engines = ("per_param", "torch_fsdp2", "flat", "torch_fsdp1")
columns = (("init_time", "s"), ("init_time_connect", "s"), ("init_time_construct", "s"), ("init_time_shard", "s"),
           ("init_time_load", "s"), ("init_host_rss_peak", "MiB"), ("init_peak_bytes", "MiB"))


def figures(model, r, engine):
    f = glob.glob(os.path.join(out, f"{model}-r{r}", f"*engine={engine}_*.json"))[0]
    return {m["name"]: m["median"] for m in json.load(open(f))["metrics"]}


def span(values, unit):
    scale = 2**20 if unit == "MiB" else 1
    v = [x / scale for x in values]
    fmt = "{:.1f}" if unit == "MiB" else "{:.3f}"
    return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}-{fmt.format(max(v))}]"


print(f"init=meta from one HF directory, LoRA, 2 Gloo ranks; {rounds} launches per model, all four engines in each;")
print("median [min-max] over launches of each launch's value (the slowest rank's time, the largest rank's memory)")
for model in models:
    rows = {e: [figures(model, r, e) for r in range(rounds)] for e in engines}
    print(f"\n{model}")
    print(f"{'engine':12}" + "".join(f" {name + ' ' + unit:>27}" for name, unit in columns))
    for e in engines:
        cells = [span([x[name] for x in rows[e]], unit) if name in rows[e][0] else "-" for name, unit in columns]
        print(f"{e:12}" + "".join(f" {c:>27}" for c in cells))
    for ours, peer in (("per_param", "torch_fsdp2"), ("flat", "torch_fsdp1")):
        for name, what in (("init_time", "init time"), ("init_host_rss_peak", "init host RSS")):
            ratios = [a[name] / b[name] for a, b in zip(rows[ours], rows[peer])]
            print(f"  {ours}/{peer} {what}: {span(ratios, '')} (launch by launch)")
        work = [(a["init_time"] - a["init_time_connect"]) / (b["init_time"] - b["init_time_connect"])
                for a, b in zip(rows[ours], rows[peer])]
        print(f"  {ours}/{peer} init time without connecting: {span(work, '')}")
PY
