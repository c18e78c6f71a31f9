#!/usr/bin/env python3
"""PyTorch's FSDP measured as our engines are (W3 1/7): the frozen-mix gradient blowup caught on
PyTorch itself, by bytes, and the peer's training peak free of init's memory.

1. `run scenarios/lora_blowup.yaml engine=torch_fsdp1 checks.max_grad_blowup=1.1`: the
   use_orig_params=true, transformer_block instance is red on grad_memory with its bytes (PyTorch's
   own warning says 64,896 numel instead of 18,688: 259,584 bytes for 74,752 owned), the
   lora_separate instances are green; the console prints PyTorch's warning and says "not
   measured" where the peer measured nothing, never 0.00; every rank's gradient bytes equal our
   flat engine's on the same scenario exactly.
2. The host peak reset the peer makes when warmup ends (peers/torch_fsdp/memory.py) drops what
   init allocated and freed: a 256 MiB ballast touched and freed before the reset is not in the
   peak after it.

4. Traced, the peers' timelines (torch.profiler, one file a rank) give comm_exposed_time,
   comm_overlap_ratio and rank_idle_time, and `trace summarize` reads them.
3. With forward and backward prefetch, the peaks of gathered parameters and unsharded gradients
   equal per_param's on torch_fsdp2 (a prefetched unit counted while FSDP2 holds it in its flat
   all-gather output).

The exact equality of the peer's memory by category and collectives with our engines' on
peers_tiny is checked in peer_parity_check.py, on the run it already makes.

    tests/end_to_end/peer_measurement_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
scenario = os.path.join(source, "scenarios", "lora_blowup.yaml")


def fail(msg):
    sys.exit(f"peer_measurement_check: {msg}")


def run(engine, out):
    p = subprocess.run([binary, "run", scenario, f"engine={engine}", "checks.max_grad_blowup=1.1", "train.steps=2",
                        "--out", os.path.join(work, out)], capture_output=True, text=True)
    index = json.load(open(os.path.join(work, out, "index.json")))
    results = {i["name"]: json.load(open(os.path.join(work, out, i["file"]))) for i in index["instances"]}
    return p, results


blowup = "lora_blowup[use_orig_params=true,wrap_policy=transformer_block]"
peer_run, peer = run("torch_fsdp1", "peer")
flat_run, flat = run("flat", "flat")
if peer_run.returncode != 1:
    fail(f"the peer run should exit 1 (the blowup instance red), got {peer_run.returncode}\n{peer_run.stderr[-3000:]}")

# 1. Red on the blowup, with the bytes; green where LoRA is wrapped apart.
for name, r in peer.items():
    checks = {c["name"]: c for c in r["checks"]}
    grad = checks.get("grad_memory")
    if grad is None:
        fail(f"{name}: no grad_memory check: {r['checks']}")
    if name == blowup:
        if r["status"] != "failed" or grad["passed"]:
            fail(f"{name}: expected red on grad_memory, got {r['status']}: {grad}")
        if "259584 gradient bytes for 74752 trainable bytes" not in grad["detail"]:
            fail(f"{name}: the check should name the bytes: {grad['detail']}")
        if not any("64896 numel instead of 18688" in w for w in r.get("peer_warnings", [])):
            fail(f"{name}: PyTorch's warning missing from peer_warnings: {r.get('peer_warnings')}")
    elif r["status"] != "ok" or not grad["passed"]:
        fail(f"{name}: expected green, got {r['status']}: {r['message']}")
    print(f"{name}: {r['status']}, {grad['detail']}")

# ... and the console says so: PyTorch's warning, "not measured" rather than a zero.
out = peer_run.stdout
if "peer warned" not in out or "64896 numel" not in out:
    fail(f"the console summary does not show PyTorch's warning:\n{out[-3000:]}")
if "unsharded peak 0.00" in out or not any(l.startswith("  not measured") and "grad_sync_time" in l for l in out.splitlines()):
    fail(f"the console summary prints a zero, or does not name what the peer did not measure:\n{out[-3000:]}")

# No metric the result lists as not measured is also written as a figure.
for name, r in peer.items():
    absent = {n["name"] for n in r.get("not_measured", [])}
    written = {m["name"] for m in r["metrics"]}
    if absent & written:
        fail(f"{name}: metrics both written and listed as not measured: {sorted(absent & written)}")
    if "grad_sync_time" not in absent:
        fail(f"{name}: grad_sync_time should be listed as not measured: {sorted(absent)}")
    kinds = {m["name"]: m["kind"] for m in r["metrics"]}
    if kinds.get("peak_allocated") != "sampled" or kinds.get("grad_bytes") != "exact":
        fail(f"{name}: the peer's allocator peak should be measured and sampled, its tensor bytes exact: {kinds}")

# The peer's gradient bytes per rank equal our flat engine's, instance by instance.
for name, r in peer.items():
    def grads(result):
        return next(m["per_rank"] for m in result["metrics"] if m["name"] == "grad_bytes")
    if grads(r) != grads(flat[name]):
        fail(f"{name}: gradient bytes per rank: torch_fsdp1 {grads(r)}, flat {grads(flat[name])}")
    print(f"{name}: grad bytes per rank {grads(r)} on torch_fsdp1 and flat")

# With prefetch, the gathered parameters' peak holds the prefetched unit too, on both sides: FSDP2
# keeps it in the flat all-gather output until its own unshard waits (peers/torch_fsdp/unshard_gauge.py).
prefetch_dir = os.path.join(work, "prefetch")
p = subprocess.run([binary, "run", os.path.join(source, "scenarios", "peers_tiny.yaml"), "--quiet", "--out", prefetch_dir,
                    "--only", "*engine=per_param,enabled=true*", "--only", "*engine=torch_fsdp2,enabled=true*", "train.steps=2",
                    "sharding.forward_prefetch=true", "sharding.backward_prefetch=true"], capture_output=True, text=True)
if p.returncode != 0:
    fail(f"prefetch run: exit {p.returncode}\n{p.stderr[-3000:]}")
index = json.load(open(os.path.join(prefetch_dir, "index.json")))
peaks = {}
for i in index["instances"]:
    r = json.load(open(os.path.join(prefetch_dir, i["file"])))
    peaks[r["scenario"]["config"]["engine"]] = {m["name"]: m["per_rank"] for m in r["metrics"]
                                                 if m["name"] in ("params_unsharded_peak_bytes", "grads_unsharded_peak_bytes")}
if len(peaks) != 2 or peaks["per_param"] != peaks["torch_fsdp2"] or len(peaks["per_param"]) != 2:
    fail(f"with prefetch, the unsharded peaks differ: {peaks}")
print(f"with prefetch, unsharded peaks equal on per_param and torch_fsdp2: {peaks['per_param']}")

# 4. Traced (run --trace): each peer rank writes torch.profiler's timeline, read back as our spans
# (engine/profile/torch_profiler_trace.h): the overlap metrics measured, `trace summarize` reads it.
traced_dir = os.path.join(work, "traced")
p = subprocess.run([binary, "run", os.path.join(source, "scenarios", "peers_tiny.yaml"), "--quiet", "--trace", "--out",
                    traced_dir, "--only", "*engine=torch_fsdp1,enabled=true*", "--only", "*engine=torch_fsdp2,enabled=true*",
                    "train.steps=2"], capture_output=True, text=True)
if p.returncode != 0:
    fail(f"traced run: exit {p.returncode}\n{p.stderr[-3000:]}")
for i in json.load(open(os.path.join(traced_dir, "index.json")))["instances"]:
    r = json.load(open(os.path.join(traced_dir, i["file"])))
    m = {x["name"]: x for x in r["metrics"]}
    if not all(k in m for k in ("comm_exposed_time", "comm_overlap_ratio", "rank_idle_time")):
        fail(f"{i['name']}: traced, but no overlap metrics: {sorted(m)}")
    if not 0 <= m["comm_overlap_ratio"]["median"] <= 1 or m["comm_exposed_time"]["median"] <= 0:
        fail(f"{i['name']}: overlap figures out of range: {m['comm_overlap_ratio']['median']}, {m['comm_exposed_time']['median']}")
    print(f"{i['name']} traced: comm_exposed_time {m['comm_exposed_time']['median']:.4f} s, "
          f"comm_overlap_ratio {m['comm_overlap_ratio']['median']:.3f}")
summary = subprocess.run([binary, "trace", "summarize", traced_dir], capture_output=True, text=True)
if summary.returncode != 0 or summary.stdout.count("a peer's, one torch.profiler trace a rank") != 2 or \
        "rank 1: 2 steps" not in summary.stdout:
    fail(f"trace summarize on the peers' timelines: exit {summary.returncode}\n{summary.stdout}{summary.stderr}")

# 2. The host peak after the reset holds nothing of what was freed before it.
sys.path.insert(0, os.path.join(source, "peers"))  # the peer's package, torch_fsdp
from torch_fsdp import memory  # noqa: E402
import torch  # noqa: E402

ballast = torch.ones(64 * 1024 * 1024, dtype=torch.float32)  # 256 MiB, every page touched
with_ballast = memory.host_rss_peak()
del ballast
why = memory.reset_host_rss_peak()
if why:
    fail(f"the peak reset failed here: {why}")
after = memory.host_rss_peak()
if with_ballast - after < 200 * 1024 * 1024:
    fail(f"VmHWM {with_ballast} before the reset, {after} after: init's freed 256 MiB still counted")
print(f"host peak with a freed 256 MiB ballast {with_ballast >> 20} MiB, after the reset {after >> 20} MiB")
print("peer_measurement_check: ok")
