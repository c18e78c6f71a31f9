#!/usr/bin/env python3
"""`sharding.wrap_policy: peft` (W3 2/7 item 2): PEFT's own fsdp_auto_wrap_policy
(peft/utils/other.py) on PyTorch's FSDP beside the units our engines plan, scenarios/peers_tiny.yaml
at 2 Gloo ranks. The peer records its units (peers/torch_fsdp/units.py) in records.json, ours come
from `shardbench plan --json`; a unit is compared by its module path and the parameters it holds.

- torch_fsdp1 with LoRA: PEFT's policy forms exactly our lora_separate units (each decoder layer,
  each lora_A / lora_B Linear, the root), and our `peft` policy the same; the frozen base gets no
  gradient (grad_memory green at 1.1x);
- torch_fsdp1 without LoRA: every leaf whose weight trains is its own unit (each projection,
  norm, the embedding, lm_head) inside its layer's unit: equal to our `peft` units but for one
  explained difference: FSDP1 still wraps each decoder layer, whose parameters all went to its
  nested units, as an FSDP instance holding nothing (no flat parameter, no collective), where
  our engines plan no unit for a module left without parameters;
- torch_fsdp2 with LoRA: the grouping accelerate's fsdp2_prepare_model derives from a plugin
  holding PEFT's policy, which at accelerate 1.16 is the root alone (fsdp2_prepare_auto_wrap_policy
  translates only the transformer- and size-based policies and returns None for PEFT's
  _or_policy): one unit holding every parameter. A later accelerate that translates it turns
  this assertion red, which is the point: the row in suites/upstream.yaml must then change.

    tests/end_to_end/peer_wrap_units_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
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
    sys.exit(f"peer_wrap_units_check: {msg}")


def ours(*overrides):
    p = subprocess.run([binary, "plan", scenario, "--json", "engine=flat", *overrides], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"plan {overrides}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return {u["unit"]: sorted(u["params"]) for u in json.loads(p.stdout)["instances"][0]["units"]}


only = ["peers_tiny[engine=torch_fsdp1,enabled=true]", "peers_tiny[engine=torch_fsdp1,enabled=false]",
        "peers_tiny[engine=torch_fsdp2,enabled=true]"]
p = subprocess.run([binary, "run", scenario, "--quiet", "--out", work, "sharding.wrap_policy=peft", "train.steps=2",
                    "checks.max_grad_blowup=1.1", *[a for name in only for a in ("--only", name)]],
                   capture_output=True, text=True)
if p.returncode != 0:
    fail(f"run: exit {p.returncode}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
peer = {}
for inst in json.load(open(os.path.join(work, "index.json")))["instances"]:
    records = glob.glob(os.path.join(work, os.path.splitext(inst["file"])[0], "rep*", "records.json"))
    units = json.load(open(records[0]))["units"]
    if units is None:
        fail(f"{inst['name']}: the peer recorded no units")
    peer[inst["name"]] = {u["unit"]: sorted(u["params"]) for u in units}


def same(what, got, want):
    if got != want:
        only_got = {k: v for k, v in got.items() if want.get(k) != v}
        only_want = {k: v for k, v in want.items() if got.get(k) != v}
        fail(f"{what}: units differ\n  peer/ours only: {json.dumps(only_got)[:1500]}\n  expected only: "
             f"{json.dumps(only_want)[:1500]}")
    print(f"{what}: {len(got)} units equal")


separate = ours("lora.enabled=true", "sharding.wrap_policy=lora_separate")
same("our peft policy with LoRA vs our lora_separate", ours("lora.enabled=true", "sharding.wrap_policy=peft"), separate)
same("torch_fsdp1 + PEFT's fsdp_auto_wrap_policy vs our lora_separate", peer[only[0]], separate)
full = peer[only[1]]
empty = sorted(u for u, params in full.items() if not params and u)
if empty != [f"model.layers.{i}" for i in range(len(empty))] or not empty:
    fail(f"torch_fsdp1 + PEFT's policy without LoRA: expected each decoder layer as an empty FSDP unit, got {empty}")
same("torch_fsdp1 + PEFT's policy without LoRA (its empty layer units aside) vs our peft policy",
     {u: params for u, params in full.items() if u not in empty}, ours("lora.enabled=false", "sharding.wrap_policy=peft"))
fsdp2 = peer[only[2]]
every = sorted(p for params in separate.values() for p in params)
if list(fsdp2) != [""] or fsdp2[""] != every:
    fail(f"torch_fsdp2 + accelerate's grouping of PEFT's policy: expected the root alone holding all "
         f"{len(every)} parameters (accelerate 1.16), got units {list(fsdp2)}")
print(f"torch_fsdp2 + accelerate's grouping of PEFT's policy: the root alone, {len(every)} parameters")
print("peer_wrap_units_check: ok")
