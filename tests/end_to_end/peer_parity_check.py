#!/usr/bin/env python3
"""PyTorch's own FSDP beside shardbench's engines on the same scenario (scenarios/peers_tiny.yaml,
tiny Llama, 2 Gloo ranks, LoRA and full): every instance green (its loss_parity check against the
one-process reference included), per_param's losses equal torch_fsdp2's and flat's equal
torch_fsdp1's within 1e-5 relative, peer results valid against the results schema and carrying
the peer's versions; memory by category and collectives equal per rank (below); init=meta from a Hugging Face directory (transformers wrote it) with
activation checkpointing on all four engines, each peer equal to its engine; and a combination
PyTorch refuses reported as a red finding with PyTorch's own message, not a crash.

    tests/end_to_end/peer_parity_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR HF_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

import jsonschema

binary, source, work, hf_dir = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
scenario = os.path.join(source, "scenarios", "peers_tiny.yaml")
schema = json.load(open(os.path.join(source, "reporters", "results.schema.json")))


def fail(msg):
    sys.exit(f"peer_parity_check: {msg}")


run = subprocess.run([binary, "run", scenario, "--quiet", "--out", os.path.join(work, "run"), "train.steps=6"],
                     capture_output=True, text=True)
index = json.load(open(os.path.join(work, "run", "index.json")))
results = {}
for inst in index["instances"]:
    if inst["colour"] != "green":
        fail(f"{inst['name']} is {inst['colour']}: {inst.get('message')}\n{run.stderr[-3000:]}")
    results[inst["name"]] = json.load(open(os.path.join(work, "run", inst["file"])))
if run.returncode != 0:
    fail(f"exit {run.returncode}\n{run.stderr[-3000:]}")

for lora in ("true", "false"):
    for ours, peer in (("per_param", "torch_fsdp2"), ("flat", "torch_fsdp1")):
        a = results[f"peers_tiny[engine={ours},enabled={lora}]"]
        b = results[f"peers_tiny[engine={peer},enabled={lora}]"]
        if len(a["loss"]) != len(b["loss"]) or not a["loss"]:
            fail(f"{ours} vs {peer} lora={lora}: {len(a['loss'])} vs {len(b['loss'])} losses")
        worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a["loss"], b["loss"]))
        if worst > 1e-5:
            fail(f"{ours} vs {peer} lora={lora}: losses differ by {worst:.3g} relative (> 1e-5)")
        jsonschema.validate(b, schema)
        versions = b["provenance"].get("peer", {})
        if not all(versions.get(k) for k in ("torch", "transformers", "peft")):
            fail(f"{peer}: provenance lacks the peer's versions: {versions}")
        checks = {c["name"]: c["passed"] for c in b["checks"]}
        if checks.get("loss_parity") is not True:
            fail(f"{peer} lora={lora}: no passing loss_parity check: {b['checks']}")
        print(f"{ours:9s} vs {peer:11s} lora={lora:5s}: max relative loss difference {worst:.2e}")

# Measured as ours (W3 1/7): the bytes the peer's ranks hold by category, from PyTorch's own tensors,
# and the collectives it issued, counted at the c10d call, equal our engine's on every rank. One
# difference, explained byte by byte: torch.optim.AdamW keeps each parameter's step count as a
# float32 tensor (4 bytes) in its state, our AdamW as a host integer per parameter group; so the
# peer's optimizer state is 4 bytes more per parameter tensor with state on the rank (FSDP2: every
# trainable tensor; FSDP1 with use_orig_params: those whose part of the flat shard is not empty).
# And one in behaviour: fully_shard prefetches the next unit's all-gather in backward whatever
# the scenario says (FSDP2 has no switch to turn its implicit backward prefetch off), so with
# backward_prefetch=false its gathered-parameter peak is one decoder layer above per_param's; with
# prefetch on, both sides equal (peer_measurement_check.py).
def figure(result, name):
    return next((m["per_rank"] for m in result["metrics"] if m["name"] == name), None)


TENSORS_WITH_STATE = {"true": 28, "false": 21}  # tiny, 2 layers: LoRA A and B on 7 targets; all 9 + 3 tensors
# One decoder layer gathered (fp32, padded to the world size): with LoRA its 9 base weights and 14 adapters.
LAYER_UNIT_BYTES = {"true": 259584, "false": 184832}
for lora in ("true", "false"):
    for ours, peer in (("per_param", "torch_fsdp2"), ("flat", "torch_fsdp1")):
        a = results[f"peers_tiny[engine={ours},enabled={lora}]"]
        b = results[f"peers_tiny[engine={peer},enabled={lora}]"]
        exact = ["param_bytes", "param_bytes_fp32", "grad_bytes", "grad_blowup", "grads_unsharded_peak_bytes", "buffer_bytes"]
        if peer == "torch_fsdp1":
            exact.append("params_unsharded_peak_bytes")
        else:  # FSDP2 always prefetches one unit in backward: it holds a decoder layer more at its peak
            extra_gathered = [y - x for x, y in zip(figure(a, "params_unsharded_peak_bytes"), figure(b, "params_unsharded_peak_bytes"))]
            layer = LAYER_UNIT_BYTES[lora]
            if extra_gathered != [layer, layer]:
                fail(f"{ours} vs {peer} lora={lora}: gathered-parameter peaks differ by {extra_gathered}, expected one "
                     f"decoder layer ({layer} bytes) for FSDP2's implicit backward prefetch")
        exact += sorted(m["name"] for m in a["metrics"] if m["name"].endswith(("_count", "_bytes")) and m["name"].startswith("comm_"))
        for name in exact:
            if figure(a, name) is None or figure(a, name) != figure(b, name):
                fail(f"{ours} vs {peer} lora={lora}: {name} per rank {figure(a, name)} vs {figure(b, name)}")
        extra = [y - x for x, y in zip(figure(a, "optim_state_bytes"), figure(b, "optim_state_bytes"))]
        if peer == "torch_fsdp2" and extra != [4 * TENSORS_WITH_STATE[lora]] * 2:
            fail(f"{ours} vs {peer} lora={lora}: optimizer state differs by {extra} bytes per rank, expected "
                 f"4 x {TENSORS_WITH_STATE[lora]} step tensors")
        if any(e <= 0 or e % 4 or e > 4 * TENSORS_WITH_STATE[lora] for e in extra):
            fail(f"{ours} vs {peer} lora={lora}: optimizer state differs by {extra} bytes per rank (not 4 per step tensor)")
        absent = {n["name"] for n in b.get("not_measured", [])}
        if "grad_sync_time" not in absent or any(m["name"] in absent for m in b["metrics"]):
            fail(f"{peer}: the metrics it does not measure are not listed as such: {sorted(absent)}")
        print(f"{ours:9s} vs {peer:11s} lora={lora:5s}: {', '.join(exact)} equal per rank; optimizer state +{extra} "
              f"bytes (AdamW's step tensors)")

# The README's table of metrics per engine says what a CPU run of each peer measures: its rows
# for "always" and "Gloo" checked against these results (measured: written; absent: listed in
# not_measured, not written).
def readme_rows():
    rows, inside = [], False
    for line in open(os.path.join(source, "README.md")):
        if line.startswith("| metric | when | kind | ours"):
            inside = True
        elif inside and not line.startswith("|"):
            break
        elif inside and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    if not rows:
        fail("README.md has no table of metrics per engine")
    return rows


for row in readme_rows():
    metrics, when = row[0], row[1]
    if when not in ("always", "Gloo"):
        continue
    for column, peer in ((4, "torch_fsdp1"), (5, "torch_fsdp2")):
        result = results[f"peers_tiny[engine={peer},enabled=true]"]
        written = [m["name"] for m in result["metrics"]]
        absent = [n["name"] for n in result.get("not_measured", [])]
        for name in metrics.split(", "):
            pattern = re.compile("^" + re.sub(r"\\{\w+\\}", r"[a-z0-9_]+", re.escape(name)) + "$")
            says_absent = row[column].startswith("absent")
            if says_absent and (any(map(pattern.match, written)) or not any(map(pattern.match, absent))):
                fail(f"README says {name} is absent on {peer}, the run says otherwise (written {written}, absent {absent})")
            if not says_absent and not any(map(pattern.match, written)):
                fail(f"README says {name} is measured on {peer}, the run did not write it (absent {absent})")
print("README's metrics per engine agree with the peers' results")

# init=meta from a Hugging Face directory with activation checkpointing, on all four engines: the
# torchtune recipe on the peers (meta device, sharded, to_empty, the checkpoint broadcast from
# rank 0 into the shards, RoPE recomputed; peers/torch_fsdp/meta_init.py) and checkpoint_wrapper
# (non-reentrant) on each decoder layer; shard-by-shard reads and recomputed layers on ours. Every
# instance green (loss parity against the one-process reference, which loads the whole directory
# and keeps every activation), each peer's losses equal to its engine's. A peer that forgot the
# RoPE buffer would train on uninitialised memory and fail both; one whose recompute changed a
# number would fail parity.
out = os.path.join(work, "meta")
meta = subprocess.run([binary, "run", scenario, "--quiet", "--out", out, "train.steps=6", "init=meta",
                       "lora.enabled=true", "activation_checkpointing=true", f"model={hf_dir}"],
                      capture_output=True, text=True)
meta_index = json.load(open(os.path.join(out, "index.json")))
meta_results = {}
for inst in meta_index["instances"]:
    if inst["colour"] != "green":
        fail(f"init=meta {inst['name']} is {inst['colour']}: {inst.get('message')}\n{meta.stderr[-3000:]}")
    meta_results[inst["name"].split("engine=")[1].split(",")[0]] = json.load(open(os.path.join(out, inst["file"])))
if meta.returncode != 0 or len(meta_results) != 4:
    fail(f"init=meta: exit {meta.returncode}, instances {sorted(meta_results)}\n{meta.stderr[-3000:]}")
for ours, peer in (("per_param", "torch_fsdp2"), ("flat", "torch_fsdp1")):
    a, b = meta_results[ours], meta_results[peer]
    config = b["scenario"]["config"]
    if config.get("init") != "meta" or config.get("model") != hf_dir or config.get("activation_checkpointing") is not True:
        fail(f"{peer}: the result does not say init=meta from {hf_dir} with activation_checkpointing")
    if {c["name"]: c["passed"] for c in b["checks"]}.get("loss_parity") is not True:
        fail(f"{peer} init=meta + activation checkpointing: no passing loss_parity check: {b['checks']}")
    worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a["loss"], b["loss"]))
    if len(a["loss"]) != len(b["loss"]) or worst > 1e-5:
        fail(f"init=meta {ours} vs {peer}: losses differ by {worst:.3g} relative")
    load = {m["name"]: m["median"] for m in b["metrics"]}.get("init_time_load")
    if not load or load <= 0:
        fail(f"init=meta {peer}: no checkpoint load time (init_time_load={load})")
    print(f"init=meta + activation checkpointing {ours:9s} vs {peer:11s}: max relative loss difference {worst:.2e}, "
          f"peer load {load:.3f} s")

# The side-by-side report over the same run: every pair's losses within tolerance (exit 0).
md = os.path.join(work, "engines.md")
side = subprocess.run([binary, "compare", os.path.join(work, "run"), "--engines", "--markdown", md, "--html",
                       os.path.join(work, "engines.html")], capture_output=True, text=True)
if side.returncode != 0 or "per\\_param | torch\\_fsdp2" not in open(md).read():
    fail(f"compare --engines: exit {side.returncode}\n{side.stdout}{side.stderr}")
print(side.stdout)

refused = subprocess.run([binary, "run", scenario, "--quiet", "--out", os.path.join(work, "refused"), "train.steps=2",
                          "engine=torch_fsdp1", "lora.enabled=true", "sharding.use_orig_params=false"],
                         capture_output=True, text=True)
if refused.returncode != 1:
    fail(f"the refused combination should end red (exit 1), got {refused.returncode}\n{refused.stderr[-2000:]}")
index = json.load(open(os.path.join(work, "refused", "index.json")))
r = json.load(open(os.path.join(work, "refused", index["instances"][0]["file"])))
jsonschema.validate(r, schema)
detail = " ".join(c["detail"] for c in r["checks"] if c["name"] == "peer_accepts_scenario")
if "requires_grad" not in detail or "use_orig_params=False" not in detail:
    fail(f"the refusal does not carry PyTorch's message: {r['checks']}")
print("refused combination reported with PyTorch's message:", detail[:120])
