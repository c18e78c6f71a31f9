#!/usr/bin/env python3
"""FSDP1's LOCAL_STATE_DICT on PyTorch itself (W3 2/7 item 1; pytorch#102667, closed without a
fix): tiny, full fine-tuning, 2 Gloo ranks, `checkpoint.type=local` saved after step 4 with
FSDP.state_dict_type(LOCAL_STATE_DICT) and FSDP.optim_state_dict, loaded into a fresh model,
compared bit for bit (state_dict_roundtrip) and trained on (resume), per use_orig_params:

- use_orig_params=false: green, every parameter and optimizer state tensor equal after the load,
  the resumed losses equal the uninterrupted run's;
- use_orig_params=true: red, in PyTorch's own words: the state dict it saves holds the flat
  parameters beside the original ones, and its own load refuses them ("Unexpected key(s) in
  state_dict: ... _flat_param") - measured at the pinned torch, a finding, not a crash.

    tests/end_to_end/peer_local_state_dict_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
EXPECTED = {"false": ("ok", None), "true": ("failed", "Unexpected key(s) in state_dict")}


def fail(msg):
    sys.exit(f"peer_local_state_dict_check: {msg}")


for use_orig_params, (status, words) in EXPECTED.items():
    out = os.path.join(work, f"use_orig_params={use_orig_params}")
    p = subprocess.run([binary, "run", os.path.join(source, "scenarios", "peers_tiny.yaml"), "--quiet", "--out", out,
                        "engine=torch_fsdp1", "lora.enabled=false", f"sharding.use_orig_params={use_orig_params}",
                        "checkpoint.type=local", "checkpoint.save_step=4", "checks.state_dict_roundtrip=true",
                        "checks.resume=true", "train.steps=4"], capture_output=True, text=True)
    index = json.load(open(os.path.join(out, "index.json")))
    result = json.load(open(os.path.join(out, index["instances"][0]["file"])))
    checks = {c["name"]: c for c in result["checks"]}
    if result["status"] != status or p.returncode != (0 if status == "ok" else 1):
        fail(f"use_orig_params={use_orig_params}: {result['status']} (exit {p.returncode}), expected {status}: "
             f"{result['message']}\n{p.stderr[-2000:]}")
    for name in ("state_dict_roundtrip", "resume"):
        c = checks.get(name)
        if c is None or c["passed"] != (words is None) or (words and words not in c["detail"]):
            fail(f"use_orig_params={use_orig_params}: {name}: {c}")
    if words is None and "0 differ" not in checks["state_dict_roundtrip"]["detail"]:
        fail(f"use_orig_params=false: the roundtrip should compare equal: {checks['state_dict_roundtrip']['detail']}")
    print(f"use_orig_params={use_orig_params}: {result['status']}; state_dict_roundtrip: "
          f"{checks['state_dict_roundtrip']['detail'][:160]}")
print("peer_local_state_dict_check: ok")
