#!/usr/bin/env python3
"""profile.instructions under valgrind's callgrind (engine/profile/instruction_count.h), end to end:
  1. a counted run reports instructions_per_step (exact), leaves every timing out (not_measured:
     they would measure valgrind), and launches once whatever --repetitions says;
  2. two plain launches count the same instructions to within 0.1% (one rank, one thread);
  3. failpoint slow_optimizer_5pct adds its planted iterations (engine/common/planted_work.h,
     500,000 a step) at 3 to 8 instructions each, and `compare` with a 1% tolerance calls that a
     regression of instructions_per_step (exit 1) while the two plain launches compare green.
About two minutes: three launches of the tiny model, each ~40 s under valgrind.

    tests/end_to_end/instruction_count_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
PLANTED_ITERATIONS = 500_000  # 5% of kReferenceStepIterations (10,000,000)


def fail(msg):
    sys.exit(f"instruction_count_check: {msg}")


def launch(name, *extra):
    out = os.path.join(work, name)
    p = subprocess.run([binary, "run", os.path.join(source, "scenarios", "smoke.yaml"), "--quiet", "--out", out,
                        "world_size=1", "train.steps=3", "train.warmup_steps=1", "checks.loss_parity=false",
                        "profile.instructions=true", *extra], capture_output=True, text=True, timeout=400)
    if p.returncode != 0:
        fail(f"{name}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    index = json.load(open(os.path.join(out, "index.json")))
    entry = index["instances"][0]
    return out, entry, json.load(open(os.path.join(out, entry["file"])))


def counted(result):
    metric = {m["name"]: m for m in result["metrics"]}.get("instructions_per_step")
    if not metric or metric["kind"] != "exact" or not metric["median"] > 1e6:
        fail(f"no exact instructions_per_step in {sorted(m['name'] for m in result['metrics'])}")
    return metric["median"]


a_dir, a_entry, a = launch("a", "--repetitions", "3")
if a_entry["repetitions"] != 1:
    fail(f"a counted instance launched {a_entry['repetitions']} times, not once")
timings = {"step_time", "tokens_per_s", "optimizer_share", "host_rss_peak"}
left_out = {n["name"] for n in a["not_measured"]}
if timings - left_out or any(m["kind"] != "exact" for m in a["metrics"]):
    fail(f"timings under valgrind reported: not_measured {sorted(left_out)}")

b_dir, _, b = launch("b")
count_a, count_b = counted(a), counted(b)
if abs(count_a - count_b) > 0.001 * count_a:
    fail(f"two plain launches counted {count_a:,.0f} and {count_b:,.0f} instructions a step (> 0.1% apart)")

c_dir, _, c = launch("planted", "failpoints=[slow_optimizer_5pct]")
per_iteration = (counted(c) - count_a) / PLANTED_ITERATIONS
if not 3 <= per_iteration <= 8:
    fail(f"slow_optimizer_5pct added {per_iteration:.2f} instructions per planted iteration, not 3-8")

policy = os.path.join(work, "policy.yaml")
open(policy, "w").write('metrics:\n  "*": {gate: false}\n  instructions_per_step: {gate: true, tolerance: 0.01}\n')
same = subprocess.run([binary, "compare", a_dir, b_dir, "--policy", policy], capture_output=True, text=True)
slower = subprocess.run([binary, "compare", a_dir, c_dir, "--policy", policy], capture_output=True, text=True)
if same.returncode != 0:
    fail(f"A/A compare exit {same.returncode}:\n{same.stdout}")
line = next((l for l in slower.stdout.splitlines() if "instructions_per_step" in l), "")
if slower.returncode != 1 or "regression" not in line:
    fail(f"the planted slowdown was not a regression (exit {slower.returncode}):\n{slower.stdout}")
print(f"instruction_count_check: plain {count_a:,.0f} and {count_b:,.0f} instructions a step; "
      f"planted +{counted(c) - count_a:,.0f} ({per_iteration:.2f} an iteration), caught: {line.strip()}")
