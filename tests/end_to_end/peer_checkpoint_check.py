#!/usr/bin/env python3
"""Checkpoints on PyTorch's FSDP (peers/torch_fsdp/checkpoints.py) beside ours, scenarios/peers_tiny.yaml,
2 Gloo ranks:
  - SHARDED (torch.distributed.checkpoint on the peers) with LoRA and FULL (full_state_dict
    gathered to rank 0) without: on all four engines the state_dict_roundtrip check passes and
    checkpoint_save_time, checkpoint_bytes and checkpoint_load_time are reported; SHARDED saved
    after step 3 of 6 also passes the resume check (the loaded model trains on to the same losses
    and final state as the uninterrupted run);
  - cross loads of FULL checkpoints, which are Hugging Face directories on both sides: ours starts
    from the one torch_fsdp2 saved, torch_fsdp2 from the one per_param saved (init=meta, model=DIR);
    starting from the same trained weights, the first losses agree within 1e-5 relative;
  - a SHARDED checkpoint of DCP given as a model is refused naming why (exit 2);
  - ADAPTER checkpoints (PEFT's layout) with LoRA: the roundtrip on all four engines and on
    FSDP1 without use_orig_params, and the files torch_fsdp2 and per_param wrote hold the same
    tensors by name, shape and dtype, values within 1e-4 (the same training on both sides), with
    the same adapter_config.json.

    tests/end_to_end/peer_checkpoint_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
scenario = os.path.join(source, "scenarios", "peers_tiny.yaml")


def fail(msg):
    sys.exit(f"peer_checkpoint_check: {msg}")


def run(name, *overrides, expect=0):
    out = os.path.join(work, name)
    p = subprocess.run([binary, "run", scenario, "--quiet", "--out", out, *overrides], capture_output=True, text=True)
    if p.returncode != expect:
        fail(f"{name}: exit {p.returncode}, expected {expect}\n{p.stdout[-2000:]}{p.stderr[-3000:]}")
    if expect != 0:
        return p
    index = json.load(open(os.path.join(out, "index.json")))
    results = {}
    for inst in index["instances"]:
        if inst["colour"] != "green":
            fail(f"{name}: {inst['name']} is {inst['colour']}: {inst.get('message')}")
        engine = inst["name"].split("engine=")[1].split(",")[0]
        results[engine] = (json.load(open(os.path.join(out, inst["file"]))), os.path.join(out, os.path.splitext(inst["file"])[0]))
    return results


def metrics(result):
    return {m["name"]: m for m in result["metrics"]}


# 1. Roundtrips: SHARDED and ADAPTER with LoRA, FULL without (all kept: later steps read them).
for kind, lora, keep in (("sharded", "true", "true"), ("full", "false", "true"), ("adapter", "true", "true")):
    resume = ("checkpoint.save_step=3", "checks.resume=true") if kind == "sharded" else ()
    results = run(kind, "train.steps=4", f"lora.enabled={lora}", f"checkpoint.type={kind}", f"checkpoint.keep={keep}",
                  "checks.state_dict_roundtrip=true", *resume)
    if sorted(results) != ["flat", "per_param", "torch_fsdp1", "torch_fsdp2"]:
        fail(f"{kind}: instances {sorted(results)}")
    for engine, (r, _) in results.items():
        check = next((c for c in r["checks"] if c["name"] == "state_dict_roundtrip"), None)
        if not check or not check["passed"] or " 0 differ" not in check["detail"]:
            fail(f"{kind} {engine}: state_dict_roundtrip {check}")
        if resume:
            resumed = next((c for c in r["checks"] if c["name"] == "resume"), None)
            if not resumed or not resumed["passed"] or "0 of 3 losses differ" not in resumed["detail"]:
                fail(f"{kind} {engine}: resume {resumed}")
            print(f"{kind:7s} {engine:11s} resume: {resumed['detail'][:110]}...")
        m = metrics(r)
        for name in ("checkpoint_save_time", "checkpoint_bytes", "checkpoint_load_time"):
            if name not in m or not m[name]["median"] or m[name]["median"] <= 0:
                fail(f"{kind} {engine}: no {name} in {sorted(m)}")
        print(f"{kind:7s} {engine:11s} roundtrip: {check['detail'][:90]}...; save {m['checkpoint_save_time']['median']:.3f} s, "
              f"{m['checkpoint_bytes']['median']:.0f} bytes, load {m['checkpoint_load_time']['median']:.3f} s")
    if kind == "full":
        full = results
    elif kind == "adapter":
        adapter = results
    else:
        sharded = results

# 2. Cross loads of FULL checkpoints (Hugging Face directories on both sides).
peer_dir = glob.glob(os.path.join(full["torch_fsdp2"][1], "rep0", "checkpoint"))[0]
ours_dir = glob.glob(os.path.join(full["per_param"][1], "rep0", "checkpoint"))[0]
for d in (peer_dir, ours_dir):
    if not os.path.isfile(os.path.join(d, "config.json")) or not os.path.isfile(os.path.join(d, "model.safetensors")):
        fail(f"{d} is not a Hugging Face directory: {os.listdir(d)}")
common = ("train.steps=2", "train.warmup_steps=0", "lora.enabled=false", "init=meta", "checks.learning=false")
ours_from_peer = run("ours_from_peer", *common, f"model={peer_dir}", "engine=per_param")["per_param"][0]
ours_from_ours = run("ours_from_ours", *common, f"model={ours_dir}", "engine=per_param")["per_param"][0]
peer_from_ours = run("peer_from_ours", *common, f"model={ours_dir}", "engine=torch_fsdp2")["torch_fsdp2"][0]
first = {"ours<-peer": ours_from_peer["loss"][0], "ours<-ours": ours_from_ours["loss"][0],
         "peer<-ours": peer_from_ours["loss"][0]}
base = first["ours<-ours"]
for name, loss in first.items():
    if abs(loss - base) / abs(base) > 1e-5:
        fail(f"first losses after the cross loads differ: {first}")
untrained = full["per_param"][0]["loss"][0]
if abs(base - untrained) / abs(untrained) < 1e-4:
    fail(f"the loaded weights are the untrained ones (first loss {base} vs {untrained}): nothing was loaded")
print(f"cross loads of FULL checkpoints: first losses {first} (untrained: {untrained})")

# 3. DCP's SHARDED directory given as a model: refused, naming why.
dcp_dir = os.path.join(sharded["torch_fsdp2"][1], "rep0", "checkpoint")
if not os.path.isfile(os.path.join(dcp_dir, ".metadata")):
    fail(f"no DCP .metadata in {dcp_dir}: {os.listdir(dcp_dir)}")
refused = run("dcp_as_model", "engine=per_param", "init=meta", f"model={dcp_dir}", expect=2)
if "torch.distributed.checkpoint (DCP) directory" not in refused.stderr:
    fail(f"the refusal does not say why: {refused.stderr[-1000:]}")
print("DCP directory as a model refused:", refused.stderr.strip().splitlines()[-1][:160])

# 4. ADAPTER checkpoints in the same layout on both sides, and on FSDP1 without use_orig_params
# (flat parameters, the adapters in their own units).
flat = run("adapter_flat_params", "engine=torch_fsdp1", "sharding.use_orig_params=false",
           "sharding.wrap_policy=lora_separate", "train.steps=4", "lora.enabled=true", "checkpoint.type=adapter",
           "checks.state_dict_roundtrip=true")["torch_fsdp1"][0]
check = next((c for c in flat["checks"] if c["name"] == "state_dict_roundtrip"), None)
if not check or not check["passed"]:
    fail(f"adapter, torch_fsdp1 without use_orig_params: state_dict_roundtrip {check}")
print(f"adapter torch_fsdp1 use_orig_params=false roundtrip: {check['detail'][:100]}...")
import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
files = {}
for engine in ("per_param", "torch_fsdp2"):
    d = os.path.join(adapter[engine][1], "rep0", "checkpoint")
    files[engine] = (load_file(os.path.join(d, "adapter_model.safetensors")),
                     json.load(open(os.path.join(d, "adapter_config.json"))))
ours, peer = files["per_param"][0], files["torch_fsdp2"][0]
if sorted(ours) != sorted(peer) or not ours:
    fail(f"adapter tensors differ by name: ours {sorted(ours)[:3]}..., the peer's {sorted(peer)[:3]}...")
for name in ours:
    a, b = ours[name], peer[name]
    if a.shape != b.shape or a.dtype != b.dtype or not torch.allclose(a, b, rtol=1e-4, atol=1e-7):
        fail(f"adapter '{name}': ours {a.dtype} {tuple(a.shape)}, the peer's {b.dtype} {tuple(b.shape)}, "
             f"max difference {(a.float() - b.float()).abs().max().item()}")
if files["per_param"][1] != files["torch_fsdp2"][1]:
    fail(f"adapter_config.json differs: {files['per_param'][1]} vs {files['torch_fsdp2'][1]}")
print(f"adapter checkpoints: {len(ours)} tensors, same names, shapes and dtypes, values within 1e-4")
