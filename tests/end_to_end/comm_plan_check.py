"""`shardbench plan`'s communication per step and rank (engine/memory/comm_model.h) against what
the communicators counted in real runs (each run green: loss parity against the reference):
every collective's count and bytes equal, over engines,
LoRA and full fine-tuning, mixed precision, resharding, prefetch, activation checkpointing,
gradient accumulation, clipping, wrap policies and world sizes 2 and 3.

    comm_plan_check.py SHARDBENCH SOURCE_DIR OUT_DIR [RUN_DIR]

With RUN_DIR: check every instance of that finished run instead, each planned from the
scenario it ran (RUN_DIR/<instance>/rep0/scenario.yaml; tests/end_to_end/two_nodes.sh).
"""
import json
import os
import re
import shutil
import subprocess
import sys

binary, source, out = sys.argv[1:4]
SCENARIO = os.path.join(source, "scenarios", "smoke.yaml")
STEPS = 3
COMMON = [f"train.steps={STEPS}", "train.warmup_steps=1"]
CONFIGS = [
    "2 engine=reference", "3 engine=reference lora.enabled=false train.grad_accumulation=2",
    "2 engine=flat", "3 engine=flat lora.enabled=false",
    "2 engine=flat mixed_precision.param_dtype=bf16 checks.loss_parity=false",  # bf16 is not fp32-equal
    "2 engine=flat sharding.use_orig_params=false sharding.wrap_policy=lora_separate",
    "2 engine=flat train.grad_accumulation=2 sharding.reshard_after_forward=false",
    "2 engine=flat sharding.forward_prefetch=true sharding.backward_prefetch=true train.max_grad_norm=1.0",
    "3 engine=per_param", "2 engine=per_param lora.enabled=false train.grad_accumulation=3",
    "2 engine=per_param train.grad_accumulation=2 activation_checkpointing=true",
    "2 engine=per_param sharding.wrap_policy=lora_separate sharding.backward_prefetch=true",
    # A frozen flat unit whose inputs need no gradient stays gathered into the next micro-batch
    # (it once met its own shard views there: an internal error).
    "2 engine=flat sharding.wrap_policy=lora_separate train.grad_accumulation=2",
]


def planned(overrides):
    return planned_file(SCENARIO, overrides)


def planned_file(scenario, overrides):
    """Per step and rank, from `plan`: {collective: (count, bytes)}."""
    text = subprocess.run([binary, "plan", scenario, *overrides], capture_output=True, text=True, check=True).stdout
    line = re.search(r"comm per step and rank:(.*)", text).group(1)
    if "estimate" in line:
        raise SystemExit(f"plan calls {overrides} an estimate: {line}")
    return {m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"(\w+) (\d+) x, (\d+) bytes", line)}


def measured(run_dir, steps):
    index = json.load(open(os.path.join(run_dir, "index.json")))
    return measured_instance(run_dir, index["instances"][0], steps), None


def measured_instance(run_dir, entry, steps):
    """Per step and rank (the largest rank's totals over the measured steps), from the results."""
    if not entry["file"]:
        raise SystemExit(f"{run_dir}: the run failed: {entry['message']}")
    counts = {}
    for m in json.load(open(os.path.join(run_dir, entry["file"])))["metrics"]:
        match = re.match(r"comm_(\w+)_(count|bytes)$", m["name"])
        if match and m["samples"][0] > 0:
            counts.setdefault(match.group(1), [0, 0])[match.group(2) == "bytes"] = int(m["samples"][0])
    return {k: (c // steps, b // steps) for k, (c, b) in counts.items()}


if len(sys.argv) > 4:  # every instance of one finished run, planned from the scenario each ran
    run_dir = sys.argv[4]
    index = json.load(open(os.path.join(run_dir, "index.json")))
    for entry in index["instances"]:
        result = json.load(open(os.path.join(run_dir, entry["file"])))
        steps = result["scenario"]["config"]["train"]["steps"]
        got = measured_instance(run_dir, entry, steps)
        resolved = os.path.join(run_dir, entry["file"][:-len(".json")], "rep0", "scenario.yaml")
        want = planned_file(resolved, [])
        if got != want:
            raise SystemExit(f"{entry['name']}: measured {got} per step, plan says {want}")
        print(f"{run_dir} {entry['name']}: every collective's count and bytes per step equal to plan's ({want})")
    sys.exit(0)

shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
bad = 0
for i, config in enumerate(CONFIGS):
    ws, *overrides = config.split()
    overrides += COMMON
    run_dir = os.path.join(out, f"run{i}")
    subprocess.run([binary, "run", SCENARIO, "--nproc", ws, "--quiet", "--out", run_dir, *overrides],
                   capture_output=True, text=True)
    got, _ = measured(run_dir, STEPS)
    colour = json.load(open(os.path.join(run_dir, "index.json")))["instances"][0]["colour"]
    if colour != "green":  # loss parity against the reference, the learning check
        bad += 1
        print(f"NOT GREEN ({colour}) ws={ws} {' '.join(overrides)}")
    want = planned([f"world_size={ws}", *overrides])
    if got != want:
        bad += 1
        print(f"DIFFERS ws={ws} {' '.join(overrides)}\n  measured {got}\n  planned  {want}")
    else:
        print(f"equal   ws={ws} {config.split(' ', 1)[1]}: {want}")
sys.exit(1 if bad else 0)
