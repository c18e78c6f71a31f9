#!/usr/bin/env python3
"""peer.env is loud (harness/peer_env.h, scripts/peer-env.sh):
  1. an environment that cannot be built from the wheelhouse is exit 3, and the message names
     the package and version it lacks (an empty wheelhouse: torch 0.0.1 is nowhere);
  2. a run whose peer imported other versions than its environment's name says is refused,
     exit 3 naming package, imported and asked versions, and no result is written (an
     environment named peft-0.17.1 whose Python is the project's, peft 0.18.1);
  3. the environment directory is the one the script names (C++ and script agree).
Environments go under WORK_DIR (SHARDBENCH_PEER_ENVS), never the project.

    tests/end_to_end/peer_env_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(os.path.join(work, "wheels"))
envs = os.path.join(work, "envs")
env = dict(os.environ, SHARDBENCH_PEER_ENVS=envs, SHARDBENCH_WHEELS=os.path.join(work, "wheels"))
scenario = os.path.join(source, "scenarios", "peers_tiny.yaml")


def fail(msg):
    sys.exit(f"peer_env_check: {msg}")


def run(out, *overrides):
    return subprocess.run([binary, "run", scenario, "--quiet", "--out", os.path.join(work, out), "engine=torch_fsdp2",
                           "lora.enabled=true", "train.steps=1", "train.warmup_steps=0", *overrides],
                          capture_output=True, text=True, env=env, timeout=300)


# 1. Nothing in the wheelhouse: exit 3, the asked release named, no environment left behind.
p = run("unbuildable", "peer.env=torch=0.0.1")
want = "no wheel for torch==0.0.1"
if p.returncode != 3 or want not in p.stderr:
    fail(f"an unbuildable environment: exit {p.returncode}, expected 3 with '{want}':\n{p.stderr[-1500:]}")
if os.path.exists(os.path.join(envs, ".venv-peer-torch-0.0.1")):
    fail("a failed build left its environment behind")
print(f"unbuildable environment: exit 3, '{want}'")

# 2. An environment that says peft 0.17.1 but runs the project's Python (peft 0.18.1).
name = subprocess.run([sys.executable, os.path.join(source, "scripts", "peer_env_requirements.py"), "peft=0.17.1",
                       "--name"], check=True, capture_output=True, text=True).stdout.strip()
fake = os.path.join(envs, f".venv-peer-{name}")
os.makedirs(os.path.join(fake, "bin"))
with open(os.path.join(fake, "bin", "python"), "w") as f:
    f.write(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
os.chmod(os.path.join(fake, "bin", "python"), 0o755)
with open(os.path.join(fake, "shardbench-env.json"), "w") as f:
    json.dump({"spec": "peft=0.17.1"}, f)
p = run("mislabelled", "peer.env=peft = 0.17.1")
want = "imported peft 0.18.1 (asked 0.17.1)"
if p.returncode != 3 or want not in p.stderr or "refused" not in p.stderr:
    fail(f"a mislabelled environment: exit {p.returncode}, expected 3 with '{want}':\n{p.stderr[-1500:]}")
index = json.load(open(os.path.join(work, "mislabelled", "index.json")))
if [i["colour"] for i in index["instances"]] != ["error"] or any(i.get("file") for i in index["instances"]):
    fail(f"a refused side wrote a result: {index['instances']}")
print(f"mislabelled environment ({name}): refused, exit 3, '{want}'")
print("peer_env_check: environments fail loudly and are checked against what they imported")
