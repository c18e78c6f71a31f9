#!/usr/bin/env python3
"""FSDP1's state dict types per use_orig_params on PyTorch itself beside our flat engine (W3 2/7
item 1): scenarios/fsdp1_state_dicts.yaml, full fine-tuning of the tiny Llama at 2 Gloo ranks,
checkpoint.type full / sharded / local x use_orig_params true / false on flat and torch_fsdp1,
each saved after step 3 (the peer through FSDP.state_dict_type + FSDP.optim_state_dict), loaded
into a fresh model (state_dict_roundtrip) and trained on (resume). Colours held per instance:

- every flat instance and every torch_fsdp1 instance but one: green, 0 tensors differ after the
  load, the resumed losses equal the uninterrupted run's;
- torch_fsdp1, local, use_orig_params=true: red in PyTorch's own words - the state dict it
  saves holds the flat parameters beside the original ones and its own load refuses them
  ("Unexpected key(s) in state_dict: ... _flat_param"; pytorch#102667, closed without a fix),
  a finding, not a crash.

The README's state dict table must show the same verdicts (its "PyTorch's FSDP1" column).

    tests/end_to_end/peer_state_dict_types_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
RED = {("torch_fsdp1", "local", "true"): "Unexpected key(s) in state_dict"}


def fail(msg):
    sys.exit(f"peer_state_dict_types_check: {msg}")


p = subprocess.run([binary, "run", os.path.join(source, "scenarios", "fsdp1_state_dicts.yaml"), "--quiet",
                    "--out", work], capture_output=True, text=True)
if p.returncode != 1:  # one red instance
    fail(f"exit {p.returncode}, expected 1 (one red instance)\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
index = json.load(open(os.path.join(work, "index.json")))
seen = {}
for inst in index["instances"]:
    key = tuple(re.search(rf"{field}=([a-z_0-9]+)", inst["name"]).group(1)
                for field in ("engine", "type", "use_orig_params"))
    result = json.load(open(os.path.join(work, inst["file"])))
    checks = {c["name"]: c for c in result["checks"]}
    words = RED.get(key)
    want = "red" if words else "green"
    if inst["colour"] != want:
        fail(f"{key}: {inst['colour']}, expected {want}: {inst.get('message')}")
    for name in ("state_dict_roundtrip", "resume"):
        c = checks.get(name)
        if c is None or c["passed"] != (words is None) or (words and words not in c["detail"]):
            fail(f"{key}: {name}: {c}")
    if words is None and " 0 differ" not in checks["state_dict_roundtrip"]["detail"]:
        fail(f"{key}: the roundtrip should compare equal: {checks['state_dict_roundtrip']['detail']}")
    if key[0] == "torch_fsdp1" and "FSDP.state_dict_type(" not in checks["state_dict_roundtrip"]["detail"] and not words:
        fail(f"{key}: not saved through FSDP.state_dict_type: {checks['state_dict_roundtrip']['detail']}")
    seen[key] = inst["colour"]
    print(f"{key}: {inst['colour']}")
if len(seen) != 12:
    fail(f"{len(seen)} instances, expected 12")

# The README's table: per kind and use_orig_params, PyTorch's FSDP1 column says "roundtrips" for
# a green instance and "refuses" for a red one.
readme = open(os.path.join(source, "README.md")).read()
rows = re.findall(r"^\| `(full|sharded|local)` \| (true|false) \|([^\n]*)$", readme, re.M)
table = {(kind, uop): [c.strip() for c in rest.split("|")] for kind, uop, rest in rows}
for (engine, kind, uop), colour in seen.items():
    if engine != "torch_fsdp1":
        continue
    cells = table.get((kind, uop))
    if not cells or len(cells) < 2:
        fail(f"README: no state dict table row for `{kind}` | {uop}")
    said = cells[1]
    if (colour == "green") != said.startswith("roundtrips") or (colour == "red") != said.startswith("refuses"):
        fail(f"README: `{kind}` use_orig_params={uop}: PyTorch's column says '{said}', measured {colour}")
print("peer_state_dict_types_check: ok")
