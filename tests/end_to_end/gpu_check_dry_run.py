"""scripts/gpu-check.sh prepared on CPU (W3 6/7): its --dry-run prints every command the device
run will make, writes nothing, and the suite it runs pairs each of our engines with PyTorch's
like for like.

1. The dry run names the CUDA build against the machine's Python, the GPU unit tests (GpuFacts
   included), suites/gpu.yaml with peer.python set to that same Python, the summary and the
   engines' side by side; it exits 0 and creates no OUT_DIR. An unknown option exits 2.
2. suites/gpu.yaml's gpu_engines instances: flat, torch_fsdp1, per_param, torch_fsdp2, resolved to
   the same scenario but for their engine (so compare --engines reports them like for like).

    gpu_check_dry_run.py BINARY SOURCE_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import yaml

binary, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
out = os.path.join(work, "check")
machine_python = "/opt/example/.venv/bin/python"  # as SHARDBENCH_PYTHON names it on the device


def fail(message):
    sys.exit(f"gpu_check_dry_run: {message}")


env = dict(os.environ, SHARDBENCH_PYTHON=machine_python)
p = subprocess.run(["bash", os.path.join(source, "scripts", "gpu-check.sh"), out, "--dry-run"], env=env,
                   capture_output=True, text=True)
if p.returncode != 0:
    fail(f"--dry-run: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
commands = [line[2:] for line in p.stdout.splitlines() if line.startswith("+ ")]
expected = [
    ("build", ["scripts/build.sh", f"-DSHARDBENCH_PYTHON={machine_python}", "-DSHARDBENCH_CUDA=ON"]),
    ("GPU unit tests", ["build-gpu/tests/shardbench_tests", "NcclCommunicator.*", "KernelTrace.*", "GpuFacts.*", "DeviceInit.*", "HostSync.*"]),
    ("suite", ["build-gpu/shardbench run", "suites/gpu.yaml", f"--out {out}/run", f"peer.python={machine_python}"]),
    ("summary", [f"{machine_python} ", "scripts/run_summary.py", f"> {out}/summary.md"]),
    ("engines", ["build-gpu/shardbench compare", "--engines", f"--markdown {out}/engines.md"]),
]
if len(commands) < len(expected):
    fail(f"{len(commands)} commands printed, expected at least {len(expected)}:\n{p.stdout}")
position = 0
for what, parts in expected:  # in this order
    while position < len(commands) and not all(part in commands[position] for part in parts):
        position += 1
    if position == len(commands):
        fail(f"the {what} command ({parts}) is not printed after the earlier ones:\n{p.stdout}")
if os.path.exists(out):
    fail(f"--dry-run created {out}")
bad = subprocess.run(["bash", os.path.join(source, "scripts", "gpu-check.sh"), out, "--bogus"], capture_output=True, text=True)
if bad.returncode != 2:
    fail(f"--bogus: exit {bad.returncode}, expected 2")

# 2. Like for like by construction.
show = subprocess.run([binary, "show", os.path.join(source, "suites", "gpu.yaml"), "--all"], capture_output=True, text=True,
                      env=dict(os.environ, SHARDBENCH_HOME=source))
if show.returncode != 0:
    fail(f"show suites/gpu.yaml: exit {show.returncode}\n{show.stderr}")
instances = [d for d in yaml.safe_load_all(show.stdout) if isinstance(d, dict) and str(d.get("name", "")).startswith("gpu_engines[")]
engines = sorted(d["engine"] for d in instances)
if engines != ["flat", "per_param", "torch_fsdp1", "torch_fsdp2"]:
    fail(f"gpu_engines runs {engines}")
strip = lambda d: {k: v for k, v in d.items() if k not in ("name", "engine")}
first = strip(instances[0])
for d in instances[1:]:
    if strip(d) != first:
        differ = sorted(k for k in set(first) | set(strip(d)) if first.get(k) != strip(d).get(k))
        fail(f"{d['name']} differs from {instances[0]['name']} in {differ}")
if first.get("profile", {}).get("kernel_trace") or first["mixed_precision"]["param_dtype"] != "bf16" or first["init"] != "meta" \
        or not first["lora"]["enabled"]:
    fail(f"gpu_engines is not the untraced bf16 meta-init LoRA scenario: {first}")
print(f"gpu_check_dry_run: {len(commands)} commands in order, nothing written; gpu_engines: {engines}, like for like")
