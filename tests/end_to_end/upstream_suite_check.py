#!/usr/bin/env python3
"""`shardbench run upstream` (suites/upstream.yaml; ci/nightly.sh runs it every night): every
instance ends in the colour its entry expects at the pinned versions, the run exits 0, and each
red instance is red for the reason its entry names (the check in its message), so that a red
turning red for another reason is caught too.

    tests/end_to_end/upstream_suite_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
# The check each expected-red entry is red on (its failed check, in the instance's message).
RED_BECAUSE = {"fsdp1_frozen_mix_use_orig_params": "grad_memory", "fsdp1_frozen_mix_flat_params": "peer_accepts_scenario",
               "fsdp1_local_state_dict_use_orig_params": "state_dict_roundtrip",
               "fsdp1_optimizer_before_wrap_flat_params": "learning", "fsdp2_frozen_base_upcast": "frozen_dtype",
               "accelerate_fsdp1_frozen_mix_flat_params": "peer_accepts_scenario",
               "accelerate_fsdp1_optimizer_before_prepare_flat_params": "learning",
               "accelerate_fsdp1_sharded_state_dict": "state_dict_roundtrip"}
# Pairs that must train identically (losses equal to the bit): accelerate#2177's claim.
IDENTICAL = [("accelerate_fsdp1_optimizer_before_prepare_use_orig_params", "accelerate_fsdp1_optimizer_after_prepare_use_orig_params")]


def fail(msg):
    sys.exit(f"upstream_suite_check: {msg}")


p = subprocess.run([binary, "run", "upstream", "--quiet", "--out", work], capture_output=True, text=True)
index = json.load(open(os.path.join(work, "index.json")))
for inst in index["instances"]:
    entry = inst["name"].split("[")[0]
    if not inst["as_expected"] or inst["colour"] != inst["expect"]:
        fail(f"{inst['name']}: {inst['colour']}, expected {inst['expect']}: {inst.get('message')}")
    if inst["colour"] == "red" and f"check '{RED_BECAUSE.get(entry)}' failed" not in (inst.get("message") or ""):
        fail(f"{inst['name']}: red, but not on {RED_BECAUSE.get(entry)}: {inst.get('message')}")
    print(f"{inst['name']}: {inst['colour']} as expected")
if sorted(RED_BECAUSE) != sorted(i["name"].split("[")[0] for i in index["instances"] if i["colour"] == "red"):
    fail("the red entries are not the ones this test names")
by_entry = {i["name"].split("[")[0]: i for i in index["instances"]}
for a, b in IDENTICAL:
    la, lb = (json.load(open(os.path.join(work, by_entry[e]["file"])))["loss"] for e in (a, b))
    if la != lb:
        fail(f"{a} and {b} should train identically: losses {la} vs {lb}")
    print(f"{a} == {b}: {len(la)} losses equal")
if p.returncode != 0:
    fail(f"exit {p.returncode} with every instance as expected\n{p.stderr[-2000:]}")
print(f"upstream_suite_check: {len(index['instances'])} instances in their expected colours")
