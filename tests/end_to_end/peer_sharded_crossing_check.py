#!/usr/bin/env python3
"""SHARDED checkpoints cross between PyTorch's FSDP and our engines, both directions (W3 2/7 item
3), scenarios/peers_tiny.yaml with LoRA (adapters wrapped apart), 2 Gloo ranks. Each side starts
a 3-step run from a checkpoint with `checkpoint.load_from` (parameters and optimizer state), in
its own format: ours shardbench's SHARDED, the peers torch.distributed.checkpoint (DCP);
`shardbench convert-checkpoint` converts at conversion time only (peers/torch_fsdp/dcp_convert.py).

- DCP -> ours: torch_fsdp1 and torch_fsdp2 save SHARDED after 4 steps; convert-checkpoint
  to-shardbench keeps their sharding (a piece per rank file) and their optimizer record (4 steps
  taken); flat loads FSDP1's and per_param FSDP2's converted checkpoint, and their 3 losses equal
  the peer's own runs from the original DCP within 1e-5 relative (the engines' numerics; the
  FSDP2 pair is bit for bit at torch 2.11);
- ours -> DCP: flat and per_param save SHARDED after 4 steps; convert-checkpoint to-dcp writes them as
  the PEFT model's DCP; torch_fsdp1 and torch_fsdp2 load them and train like flat and per_param
  from their own checkpoints, within 1e-5 relative;
- every loaded run differs from the same run without load_from (the checkpoint mattered), and the
  second step's loss from a checkpoint differs from one loaded without its optimizer state
  (the optimizer state mattered);
- refusals: a DCP directory as load_from on our engine names convert-checkpoint (exit 2), and the
  converter never writes over an existing directory (exit 2).

One direction per invocation (a ctest each):

    tests/end_to_end/peer_sharded_crossing_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR dcp-to-ours|ours-to-dcp
"""
import glob
import json
import os
import shutil
import subprocess
import sys

binary, source, work, direction = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
scenario = os.path.join(source, "scenarios", "peers_tiny.yaml")
LORA = ["lora.enabled=true", "sharding.wrap_policy=lora_separate"]
FROM = ["train.steps=3", "train.warmup_steps=0", "checks.loss_parity=false"]


def fail(msg):
    sys.exit(f"peer_sharded_crossing_check: {msg}")


def run(name, engine, *overrides, expect=0):
    out = os.path.join(work, name)
    p = subprocess.run([binary, "run", scenario, "--quiet", "--out", out, f"engine={engine}", *LORA, *overrides],
                       capture_output=True, text=True)
    if p.returncode != expect:
        fail(f"{name}: exit {p.returncode}, expected {expect}\n{p.stdout[-2000:]}{p.stderr[-3000:]}")
    if expect:
        return p.stderr
    result = [f for f in glob.glob(os.path.join(out, "*.json")) if not f.endswith("index.json")]
    return json.load(open(result[0]))["loss"], glob.glob(os.path.join(out, "*", "rep0", "checkpoint"))


def saved(engine):
    _, checkpoint = run(f"save_{engine}", engine, "train.steps=2", "checkpoint.type=sharded", "checkpoint.keep=true")
    return checkpoint[0]


def converted(to, src, name):
    out = os.path.join(work, name)
    p = subprocess.run([binary, "convert-checkpoint", to, src, out], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"convert-checkpoint {to} {src}: exit {p.returncode}\n{p.stderr[-3000:]}")
    return out


def close(what, a, b):
    worst = max(abs(x - y) / abs(y) for x, y in zip(a, b))
    if len(a) != len(b) or worst > 1e-5:
        fail(f"{what}: losses {a} vs {b} (largest relative difference {worst:.3g}, tolerance 1e-5)")
    print(f"{what}: {len(a)} losses agree (largest relative difference {worst:.3g})")


def differ(what, a, b):
    if abs(a - b) / abs(b) < 1e-4:
        fail(f"{what}: {a} vs {b} - the same, so what was loaded did not matter")


def dcp_to_ours(untrained):
    """Each peer's DCP converted and loaded by our engine like the peer loads the original; the
    optimizer state carried; a DCP directory given to our engine refused naming the converter."""
    from_peer = {}
    for peer, ours in PAIRS:
        dcp = saved(peer)
        mine = converted("to-shardbench", dcp, f"{peer}_as_shardbench")
        manifest = json.load(open(os.path.join(mine, "manifest.json")))
        files = {p["file"] for e in manifest["content"]["tensors"].values() for p in e["pieces"]}
        if manifest["world_size"] != 2 or len(files) != 2 or manifest["content"]["optimizer"]["steps_taken"] != 4:
            fail(f"{peer} -> ours: world size {manifest['world_size']}, files {sorted(files)}, optimizer "
                 f"{manifest['content']['optimizer']}: expected the saver's 2 ranks and 4 steps taken")
        theirs = run(f"{peer}_from_dcp", peer, *FROM, f"checkpoint.load_from={dcp}")[0]
        from_peer[ours] = run(f"{ours}_from_{peer}", ours, *FROM, f"checkpoint.load_from={mine}")[0]
        close(f"{peer}'s DCP: {ours} from the converted checkpoint vs {peer} from its own", from_peer[ours], theirs)
        differ(f"{ours} from {peer}'s checkpoint vs no checkpoint", from_peer[ours][0], untrained[0])
    # The optimizer state matters: the same parameters without it train otherwise from the 2nd step.
    params_only = os.path.join(work, "torch_fsdp2_params_only")
    shutil.copytree(os.path.join(work, "torch_fsdp2_as_shardbench"), params_only)
    manifest = json.load(open(os.path.join(params_only, "manifest.json")))
    manifest["content"]["tensors"] = {k: v for k, v in manifest["content"]["tensors"].items()
                                      if not k.startswith("state.")}
    manifest["content"]["optimizer"] = None
    json.dump(manifest, open(os.path.join(params_only, "manifest.json"), "w"))
    no_state = run("per_param_params_only", "per_param", *FROM, f"checkpoint.load_from={params_only}")[0]
    if no_state[0] != from_peer["per_param"][0]:
        fail(f"the first loss depends on the parameters only: {no_state[0]} vs {from_peer['per_param'][0]}")
    differ("second loss with vs without the converted optimizer state", from_peer["per_param"][1], no_state[1])
    dcp = glob.glob(os.path.join(work, "save_torch_fsdp2", "*", "rep0", "checkpoint"))[0]
    said = run("dcp_on_ours", "flat", *FROM, f"checkpoint.load_from={dcp}", expect=2)
    if "convert-checkpoint to-shardbench" not in said:
        fail(f"a DCP directory as load_from on flat should name the converter: {said[-500:]}")


def ours_to_dcp(untrained):
    """Each of our engines' SHARDED checkpoint converted and loaded by the peer like our engine
    loads the original; the converter never writes over an existing directory."""
    for peer, ours in PAIRS:
        mine = saved(ours)
        dcp = converted("to-dcp", mine, f"{ours}_as_dcp")
        own = run(f"{ours}_from_own", ours, *FROM, f"checkpoint.load_from={mine}")[0]
        theirs = run(f"{peer}_from_{ours}", peer, *FROM, f"checkpoint.load_from={dcp}")[0]
        close(f"{ours}'s SHARDED: {peer} from the converted DCP vs {ours} from its own", theirs, own)
        differ(f"{peer} from {ours}'s checkpoint vs no checkpoint", theirs[0], untrained[0])
    p = subprocess.run([binary, "convert-checkpoint", "to-dcp", mine, os.path.join(work, "flat_as_dcp")],
                       capture_output=True, text=True)
    if p.returncode != 2 or "exists" not in p.stderr:
        fail(f"converting over an existing directory: exit {p.returncode}: {p.stderr[-500:]}")


PAIRS = (("torch_fsdp1", "flat"), ("torch_fsdp2", "per_param"))
{"dcp-to-ours": dcp_to_ours, "ours-to-dcp": ours_to_dcp}[direction](run("no_load", "per_param", *FROM)[0])
print(f"peer_sharded_crossing_check {direction}: ok")
