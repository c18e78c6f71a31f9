#!/usr/bin/env python3
"""`shardbench run upstream` (suites/upstream.yaml; ci/nightly.sh runs it every night): every
instance ends in the colour its entry expects at the pinned versions, the run exits 0, and each
red instance is red for the reason its entry names (the check in its message), so that a red
turning red for another reason is caught too; and every peer result's provenance names the
versions pinned in requirements.txt (torch, transformers, peft, accelerate) and, for engine
torchtune, requirements-torchtune.txt's torchtune (null for the others: not imported).

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


def pins(path):
    out = {}
    for line in open(path):
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[name.strip()] = version.strip()
    return out


def check_versions(inst, result, pinned, torchtune_pin):
    """The peer's recorded versions (records.versions) against the pins; local tags (+cu130, +cpu) dropped."""
    peer = result["provenance"]["peer"]
    want = {name: pinned[name] for name in ("torch", "transformers", "peft", "accelerate")}
    want["torchtune"] = torchtune_pin if peer["engine"] == "torchtune" else None
    got = {name: peer[name].split("+")[0] if peer[name] else None for name in want}
    if got != want:
        fail(f"{inst['name']}: provenance versions {got}, pinned {want}")


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
pinned = pins(os.path.join(source, "requirements.txt"))
torchtune_pin = pins(os.path.join(source, "requirements-torchtune.txt"))["torchtune"]
for inst in index["instances"]:
    check_versions(inst, json.load(open(os.path.join(work, inst["file"]))), pinned, torchtune_pin)
print(f"provenance: {len(index['instances'])} results name the pinned versions (torchtune {torchtune_pin} where run)")
for a, b in IDENTICAL:
    la, lb = (json.load(open(os.path.join(work, by_entry[e]["file"])))["loss"] for e in (a, b))
    if la != lb:
        fail(f"{a} and {b} should train identically: losses {la} vs {lb}")
    print(f"{a} == {b}: {len(la)} losses equal")
if p.returncode != 0:
    fail(f"exit {p.returncode} with every instance as expected\n{p.stderr[-2000:]}")
print(f"upstream_suite_check: {len(index['instances'])} instances in their expected colours")
