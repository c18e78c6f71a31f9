"""A whole suite run by ranks an outside launcher started, on one machine: the same directory,
instances, colours, losses and exact metrics as our own launcher (`--nproc 2`), whether the
ranks come from srun-style variables or from torchrun; a rank that resolved the target
differently is refused by name; a rank that fails an instance fails it for all and the next
instance still runs; a rank killed mid-run ends its peers with exit 3 naming it, within the
scenario's timeout + 10 s.

    job_ranks.py SHARDBENCH PYTHON SOURCE_DIR OUT_DIR
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from same_exact import exact_view  # noqa: E402

binary, python, source, out = sys.argv[1:5]
SMOKE = os.path.join(source, "scenarios", "smoke.yaml")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
SHORT = ["train.steps=3", "train.warmup_steps=1"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def srun_ranks(world, args_of_rank, port=None):
    """Starts `world` ranks as srun would (SLURM_* variables, MASTER_ADDR/PORT from the batch script)."""
    port = port or free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, SLURM_PROCID=str(r), SLURM_NTASKS=str(world), SLURM_LOCALID=str(r), SLURM_NODEID="0",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        log = open(os.path.join(out, f"srun-{port}-rank{r}.log"), "w")
        procs.append(subprocess.Popen([binary, "run", *args_of_rank(r)], env=env, stdout=log, stderr=subprocess.STDOUT))
    return procs


def logs(port, world):
    return "".join(open(os.path.join(out, f"srun-{port}-rank{r}.log")).read() for r in range(world))


# Our own launcher: the reference.
ref = os.path.join(out, "nproc")
subprocess.run([binary, "run", "smoke", "--nproc", "2", "--quiet", "--out", ref, *SHORT], check=True)
expected = exact_view(ref)
if len(expected) != 2 or any(e["colour"] != "green" for e in expected.values()):
    fail(f"reference run: {expected}")

# (1) srun-style variables, whole suite.
job = os.path.join(out, "srun")
procs = srun_ranks(2, lambda r: ["smoke", "--quiet", "--out", job, *SHORT])
codes = [p.wait(timeout=300) for p in procs]
if codes != [0, 0]:
    fail(f"srun-style ranks exited {codes}")
for f in ["index.json", "dashboard.html", "smoke.json", "smoke_flat.json"]:
    if not os.path.isfile(os.path.join(job, f)):
        fail(f"srun-style run did not write {f}")
if exact_view(job) != expected:
    fail("srun-style run differs from --nproc 2 in colours, losses or exact metrics")
print("srun-style ranks: same instances, colours, losses and exact metrics as --nproc 2")

# (2) torchrun, whole suite.
job = os.path.join(out, "torchrun")
subprocess.run([python, "-m", "torch.distributed.run", "--no-python", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                "--master-port", str(free_port()), binary, "run", "smoke", "--quiet", "--out", job, *SHORT],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=300)
if exact_view(job) != expected:
    fail("torchrun run differs from --nproc 2 in colours, losses or exact metrics")
print("torchrun ranks: same instances, colours, losses and exact metrics as --nproc 2")

# (3) A rank that resolved the target differently is refused, by name, on every rank.
port = free_port()
procs = srun_ranks(2, lambda r: ["smoke", "--quiet", "--out", os.path.join(out, "mismatch"), *SHORT,
                                 *(["train.seq_len=32"] if r == 1 else [])], port)
codes = [p.wait(timeout=300) for p in procs]
text = logs(port, 2)
if codes != [2, 2] or "rank(s) 1 resolved the target differently from rank 0" not in text:
    fail(f"mismatched ranks exited {codes}:\n{text}")
print("a rank with other overrides: exit 2 on every rank, naming rank 1")

# (4) A rank that fails an instance fails it for all; the next instance still runs.
suite = os.path.join(out, "two.yaml")
with open(suite, "w") as f:
    f.write(f"""name: two
description: the first instance loses rank 1 in its second step, the second runs
runs:
  - scenario: {SMOKE}
    name: loses_rank1
    overrides: ["failpoints=[rank1_fails]"]
    expect: error
    why: rank 1 stops in step 2
  - scenario: {SMOKE}
    name: after
    why: the job goes on
""")
job = os.path.join(out, "fails")
port = free_port()
procs = srun_ranks(2, lambda r: [suite, "--quiet", "--out", job, *SHORT], port)
codes = [p.wait(timeout=300) for p in procs]
index = json.load(open(os.path.join(job, "index.json")))
colours = {i["name"]: i["colour"] for i in index["instances"]}
if codes != [0, 0] or colours != {"loses_rank1": "error", "after": "green"}:
    fail(f"exits {codes}, colours {colours}:\n{logs(port, 2)}")
if "rank 1: failpoint rank1_fails" not in index["instances"][0]["message"]:
    fail(f"the failed instance's message does not name rank 1: {index['instances'][0]['message']}")
print("rank 1 failing an instance: error for the instance on every rank, the next one green")

# (5) torchrun --max-restarts 1: rank 1's process dies in the second step of the third
# instance, after that instance saved its checkpoint (after step 1). The restart keeps the
# instances finished before (not run again) and continues the third from its checkpoint: its
# losses and exact metrics (counts and bytes included: the measured window began before the
# save) equal the same instance run without the loss, and its checks are green.
suite = os.path.join(out, "restart.yaml")
SAVES = '["engine=per_param", "checkpoint.type=sharded", "checkpoint.save_step=1", "train.warmup_steps=0", ' \
        '"checks.state_dict_roundtrip=true", "checks.resume=true"'
with open(suite, "w") as f:
    f.write(f"""name: restart
description: rank 1 is lost once, after the third instance saved its checkpoint
runs:
  - scenario: {SMOKE}
    name: first
    why: finished before the loss, kept by the restart
  - scenario: {SMOKE}
    name: uninterrupted
    overrides: {SAVES}]
    why: the reference for the resumed instance
  - scenario: {SMOKE}
    name: resumed
    overrides: {SAVES}, "failpoints=[rank1_lost_once]"]
    why: rank 1's process exits in the first attempt after the save; the restart continues from it
""")
job = os.path.join(out, "restart")
run = subprocess.run([python, "-m", "torch.distributed.run", "--no-python", "--nproc-per-node", "2", "--max-restarts", "1",
                      "--master-addr", "127.0.0.1", "--master-port", str(free_port()), binary, "run", suite, "--out", job,
                      "train.steps=3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
index = json.load(open(os.path.join(job, "index.json")))
colours = {i["name"]: i["colour"] for i in index["instances"]}
if run.returncode != 0 or colours != {"first": "green", "uninterrupted": "green", "resumed": "green"}:
    fail(f"torchrun --max-restarts 1 exited {run.returncode}, colours {colours}:\n{run.stdout[-3000:]}")
# torchrun's agent stops the other ranks as soon as rank 1's process exits, and restarts all.
if run.stdout.count("== first") != 2 or "== first: finished by an earlier attempt, kept" not in run.stdout:
    fail(f"no restart that kept 'first' in the output:\n{run.stdout[-3000:]}")
if "resumed after step 1 from the sharded checkpoint an earlier attempt saved (restart 1)" not in run.stdout:
    fail(f"the restart did not continue 'resumed' from its checkpoint:\n{run.stdout[-3000:]}")
view = exact_view(job)
resumed_result = json.load(open(os.path.join(job, index["instances"][2]["file"])))
if resumed_result.get("resumed_from_step") != 1:
    fail(f"resumed_from_step is {resumed_result.get('resumed_from_step')}, not 1")
if view["resumed"] != view["uninterrupted"]:
    diff = {m: (view["uninterrupted"]["exact"].get(m), v) for m, v in view["resumed"]["exact"].items()
            if view["uninterrupted"]["exact"].get(m) != v}
    fail(f"the resumed instance differs from the uninterrupted one: losses {view['resumed']['loss']} vs "
         f"{view['uninterrupted']['loss']}; exact metrics {diff}")
if os.path.exists(os.path.join(job, "resumed", "rep0", "checkpoint.resume")):
    fail("the resume point outlived its instance")
print(f"torchrun --max-restarts 1: rank 1 lost once; the restart kept 'first' and continued 'resumed' from its "
      f"step-1 checkpoint: losses and {len(view['resumed']['exact'])} exact metrics equal to the uninterrupted run")

# (6) A rank killed mid-run: its peer ends with exit 3 naming it, within timeout + 10 s.
timeout_s = 20
port = free_port()
procs = srun_ranks(2, lambda r: [SMOKE, "--quiet", "--out", os.path.join(out, "killed"), "train.steps=100000",
                                 f"timeout_s={timeout_s}"], port)
time.sleep(8)  # well into training
killed_at = time.time()
procs[1].send_signal(signal.SIGKILL)
try:
    code = procs[0].wait(timeout=timeout_s + 10)
except subprocess.TimeoutExpired:
    procs[0].kill()
    fail(f"rank 0 still running {timeout_s + 10} s after rank 1 was killed")
took = time.time() - killed_at
text = logs(port, 2)
if code != 3 or "rank(s) 1 of 2 lost" not in text:
    fail(f"rank 0 exited {code} after rank 1 was killed:\n{text}")
print(f"rank 1 killed: rank 0 exited 3 naming it after {took:.1f} s (timeout {timeout_s} s)")
