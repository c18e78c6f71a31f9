#!/usr/bin/env bash
# Our engines beside PyTorch's FSDP (the peer) on one Hugging Face directory, like for like: init
# with init=meta (both sides read the same directory into their shards) and checkpoints (SHARDED:
# ours beside torch.distributed.checkpoint; FULL: both gathered to rank 0, the same layout), each
# saved after the last step and loaded back by the state_dict_roundtrip check, for each model.
# Each launch runs all four engines of scenarios/peers_<model>.yaml (per_param, torch_fsdp2,
# flat, torch_fsdp1) with LoRA; each round launches once per checkpoint kind; ROUNDS rounds per
# model. Prints, per engine, the median over launches of each launch's figures with [min-max],
# and ours/peer ratios taken launch by launch (init figures pool both kinds' launches).
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
  # As a directory from the Hub looks: no manifest (ours would have each rank verify every file's
  # CRC-32 first, which the peer does not do) and no optimizer state.
  rm "$hf/manifest.json" "$hf/optimizer.safetensors"
  for ((r = 0; r < rounds; r++)); do
    for kind in sharded full; do
      rc=0
      "$bin" run "$scenario" --quiet --out "$out/$model-$kind-r$r" init=meta "model=$hf" lora.enabled=true \
        train.steps=1 train.warmup_steps=1 checks.loss_parity=false checks.learning=false "checkpoint.type=$kind" \
        checks.state_dict_roundtrip=true "${extra[@]}" >/dev/null || rc=$?
      [ "$rc" -le 1 ] || { echo "compare-peers: $model $kind round $r failed with exit $rc" >&2; exit "$rc"; }
    done
  done
done
python3 - "$out" "$rounds" "${models[@]}" <<'PY'
import glob, json, os, statistics, sys
out, rounds, models = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
engines = ("per_param", "torch_fsdp2", "flat", "torch_fsdp1")
columns = (("init_time", "s"), ("init_time_connect", "s"), ("init_time_construct", "s"), ("init_time_shard", "s"),
           ("init_time_load", "s"), ("init_host_rss_peak", "MiB"), ("init_peak_bytes", "MiB"))


kinds = ("sharded", "full")
checkpoint_columns = (("checkpoint_save_time", "s"), ("checkpoint_load_time", "s"), ("checkpoint_bytes", "MiB"))


def figures(model, kind, r, engine):
    f = glob.glob(os.path.join(out, f"{model}-{kind}-r{r}", f"*engine={engine}_*.json"))[0]
    result = json.load(open(f))
    if result["status"] != "ok":
        sys.exit(f"compare-peers: {model} {kind} round {r} {engine}: {result['message']}")
    return {m["name"]: m["median"] for m in result["metrics"]}


def span(values, unit):
    scale = 2**20 if unit == "MiB" else 1
    v = [x / scale for x in values]
    fmt = "{:.1f}" if unit == "MiB" else "{:.3f}"
    return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}-{fmt.format(max(v))}]"


def table(rows, cols):
    print(f"{'engine':12}" + "".join(f" {name + ' ' + unit:>27}" for name, unit in cols))
    for e in engines:
        cells = [span([x[name] for x in rows[e]], unit) if name in rows[e][0] else "-" for name, unit in cols]
        print(f"{e:12}" + "".join(f" {c:>27}" for c in cells))


def ratios(rows, name, what):
    for ours, peer in (("per_param", "torch_fsdp2"), ("flat", "torch_fsdp1")):
        print(f"  {ours}/{peer} {what}: {span([a[name] / b[name] for a, b in zip(rows[ours], rows[peer])], '')}")


print(f"init=meta from one HF directory, LoRA, 2 Gloo ranks; {rounds} rounds per model, each round one launch per "
      "checkpoint kind, all four engines in each launch;")
print("median [min-max] over launches of each launch's value (the slowest rank's time, the largest rank's memory); "
      "ratios ours/peer launch by launch")
for model in models:
    rows = {e: [figures(model, k, r, e) for r in range(rounds) for k in kinds] for e in engines}
    print(f"\n{model}: init ({2 * rounds} launches)")
    table(rows, columns)
    ratios(rows, "init_time", "init time")
    ratios(rows, "init_host_rss_peak", "init host RSS")
    for e in engines:
        for x in rows[e]:
            x["init_work"] = x["init_time"] - x["init_time_connect"]
    ratios(rows, "init_work", "init time without connecting")
    for kind in kinds:
        rows = {e: [figures(model, kind, r, e) for r in range(rounds)] for e in engines}
        print(f"\n{model}: {kind} checkpoint, saved after step 2 and loaded back ({rounds} launches)")
        table(rows, checkpoint_columns)
        ratios(rows, "checkpoint_save_time", "save time")
        ratios(rows, "checkpoint_load_time", "load time")
        ratios(rows, "checkpoint_bytes", "bytes")
PY
