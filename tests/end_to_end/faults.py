"""Faults that must end as results or clear refusals, never as crashes, hangs, orphans or lost
files (issue W2 4/7):
  (1) a diverging instance (NaN loss) in a suite: stops there, red with check 'finite' naming the step, the
      next instance still runs green, index and dashboard written, compare reads it;
  (2) two runs on one --out: the second is refused naming the first's PID, the first unharmed;
      Ctrl-C then stops the first run whole (the instances after the interrupted one not run);
  (3) kill -9 of the launcher: its ranks die with it, its index names the instance it ran;
  (4) a failed fork of the third rank: exit 3 and the two ranks already started are gone;
  (5) links planted in --out (the result file, a rank's log): written around, never through;
  (6) a SIGSTOPped rank 1: the job ends naming rank 1, not the rank that timed out waiting;
  (7) an --out that starts with '-' runs (its paths reach the ranks as paths, not options).

    faults.py SHARDBENCH SOURCE_DIR OUT_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

binary, source, out = sys.argv[1:4]
SMOKE = os.path.join(source, "scenarios", "smoke.yaml")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
SHORT = ["train.steps=3", "train.warmup_steps=1"]


started = []  # long runs this test started: stopped when it fails, so none outlives it


def fail(msg):
    print("FAIL:", msg)
    for p in started:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    sys.exit(1)


def run(*args, env=None, timeout=180):
    return subprocess.run([binary, "run", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def ranks_of(out_dir):
    """PIDs of rank processes (`shardbench rank`) writing under out_dir."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if cmd[1:2] == [b"rank"] and any(a.decode(errors="replace").startswith(out_dir) for a in cmd):
            pids.append(int(pid))
    return pids


def wait_for_ranks(out_dir, n, seconds=60):
    until = time.time() + seconds
    while time.time() < until:
        if len(ranks_of(out_dir)) >= n:
            return
        time.sleep(0.2)
    fail(f"{n} ranks under {out_dir} never started")


# (1) Divergence is a result, during warmup too (step 1 of 3 warmup steps: no step-time window
# opened; it once ended as "internal error").
suite = os.path.join(out, "diverge.yaml")
with open(suite, "w") as f:
    f.write(f"""name: diverge
runs:
  - scenario: {SMOKE}
    name: diverges
    overrides: ["train.lr=1e30", "train.steps=1000", "train.warmup_steps=3"]
  - scenario: {SMOKE}
    name: after
    overrides: ["train.steps=3", "train.warmup_steps=1"]
""")
d = os.path.join(out, "diverge")
r = run(suite, "--quiet", "--out", d)
index = json.load(open(os.path.join(d, "index.json")))
colours = {i["name"]: i["colour"] for i in index["instances"]}
if r.returncode != 1 or colours != {"diverges": "red", "after": "green"}:
    fail(f"diverging suite: exit {r.returncode}, colours {colours}\n{r.stdout[-2000:]}")
if "diverges: red, expected green: check 'finite' failed: the loss became nan at step 1" not in r.stdout:
    fail(f"--quiet did not name the failed instance and its check:\n{r.stdout[-2000:]}")
result = json.load(open(os.path.join(d, "diverges.json")))
finite = [c for c in result["checks"] if c["name"] == "finite"]
if not finite or finite[0]["passed"] or "at step 1 of 1003" not in finite[0]["detail"] or None not in result["loss"]:
    fail(f"no failed 'finite' check naming step 1, or the NaN loss is not null: {finite} {result['loss']}")
learning = [c for c in result["checks"] if c["name"] == "learning"]
if not learning or "frozen changed: 0" not in learning[0]["detail"]:  # NaN trainables; no frozen weight moved
    fail(f"the learning check misread the diverged weights: {learning}")
if len(result["loss"]) != 2:  # stopped at the first non-finite loss, not 999 steps later
    fail(f"the diverged instance trained {len(result['loss'])} steps; it should stop after step 1 (2 steps)")
if not os.path.isfile(os.path.join(d, "dashboard.html")):
    fail("no dashboard for the diverging suite")
c = subprocess.run([binary, "compare", d, d, "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
if c.returncode not in (0, 1) or "internal error" in c.stdout:
    fail(f"compare of a diverged run exited {c.returncode}:\n{c.stdout[-2000:]}")
print(f"diverging instance: red ({finite[0]['detail'][:60]}...), the next one green, index/dashboard/compare fine")

# (2) Two runs on one --out.
shared = os.path.join(out, "shared")
seeds = os.path.join(out, "seeds.yaml")  # three instances: Ctrl-C in the first must not run the others
with open(seeds, "w") as f:
    f.write(open(SMOKE).read() + "matrix:\n  train.seed: [1, 2, 3]\n")
first = subprocess.Popen([binary, "run", seeds, "--quiet", "--out", shared, "train.steps=100000", "timeout_s=60"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
started.append(first)
wait_for_ranks(shared, 2)
first_index = open(os.path.join(shared, "index.json")).read()  # written at the start: it names the running instance
second = run(SMOKE, "--quiet", "--out", shared, *SHORT)
if second.returncode != 2 or f"in use by another shardbench run (PID {first.pid})" not in second.stdout:
    fail(f"the second run on one --out exited {second.returncode}:\n{second.stdout}")
if open(os.path.join(shared, "index.json")).read() != first_index:
    fail("the refused run wrote an index into the other run's directory")
interrupted_at = time.time()
first.send_signal(signal.SIGINT)
first.wait(timeout=60)
took = time.time() - interrupted_at
print(f"second run on one --out refused naming PID {first.pid}")
entries = json.load(open(os.path.join(shared, "index.json")))["instances"]
not_run = [e["name"] for e in entries if e["message"] == "not run: the run was interrupted (Interrupt)"]
if first.returncode != 3 or took > 20 or not_run != ["smoke[seed=2]", "smoke[seed=3]"]:
    fail(f"Ctrl-C did not stop the whole run: exit {first.returncode} after {took:.1f} s, index {entries}")
print(f"Ctrl-C stopped the run in {took:.1f} s, its two later instances listed as not run")

# (3) kill -9 of the launcher takes its ranks with it.
k = os.path.join(out, "killed")
launcher = subprocess.Popen([binary, "run", SMOKE, "--quiet", "--out", k, "train.steps=100000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
started.append(launcher)
wait_for_ranks(k, 2)
launcher.kill()
launcher.wait()
until = time.time() + 5
while ranks_of(k) and time.time() < until:
    time.sleep(0.1)
if ranks_of(k):
    left = ranks_of(k)
    for p in left:
        os.kill(p, signal.SIGKILL)
    fail(f"ranks {left} outlived their launcher (kill -9) by 5 s")
running = json.load(open(os.path.join(k, "index.json")))["instances"]
if [(i["name"], i["status"], i["file"]) for i in running] != [("smoke", "running", None)]:
    fail(f"the killed run's index does not name the instance it was running: {running}")
print("launcher killed with SIGKILL: its ranks were gone within 5 s; its index names the running instance")

# (4) A failed fork stops the ranks already started.
ff = os.path.join(out, "fork")
r = run(SMOKE, "--quiet", "--nproc", "3", "--out", ff, *SHORT, env={"SHARDBENCH_FAIL_SPAWN_OF_RANK": "2"})
time.sleep(0.5)
if r.returncode != 3 or "fork failed" not in r.stdout or ranks_of(ff):
    fail(f"failed fork: exit {r.returncode}, ranks left {ranks_of(ff)}:\n{r.stdout[-2000:]}")
print("fork of rank 2 failed: exit 3, ranks 0 and 1 stopped")

# (5) Links planted in --out are written around, never through.
planted = os.path.join(out, "planted")
victim = os.path.join(out, "victim.txt")
with open(victim, "w") as f:
    f.write("not yours\n")
os.makedirs(os.path.join(planted, "smoke", "rep0", "logs"))
os.symlink(victim, os.path.join(planted, "smoke.json"))
os.symlink(victim, os.path.join(planted, "smoke", "rep0", "logs", "rank1.log"))
r = run(SMOKE, "--quiet", "--out", planted, *SHORT)
if open(victim).read() != "not yours\n":
    fail("a write went through a planted link")
if r.returncode != 0 or os.path.islink(os.path.join(planted, "smoke.json")):
    fail(f"run with planted links exited {r.returncode}; smoke.json still a link:\n{r.stdout[-2000:]}")
print("links planted at smoke.json and a rank's log: the victim file unchanged, the result a file of its own")

# (6) A SIGSTOPped rank is named.
st = os.path.join(out, "stopped")
launcher = subprocess.Popen([binary, "run", SMOKE, "--quiet", "--out", st, "train.steps=100000", "timeout_s=10"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
started.append(launcher)
wait_for_ranks(st, 2)
time.sleep(3)
rank1 = [p for p in ranks_of(st) if b"RANK=1" in open(f"/proc/{p}/environ", "rb").read().split(b"\0")]
if len(rank1) != 1:
    fail(f"rank 1 not found among {ranks_of(st)}")
os.kill(rank1[0], signal.SIGSTOP)
text, _ = launcher.communicate(timeout=60)
message = json.load(open(os.path.join(st, "index.json")))["instances"][0]["message"]
if launcher.returncode != 3 or not message.startswith("rank 1 was stopped by signal"):
    fail(f"SIGSTOPped rank 1: exit {launcher.returncode}, message: {message[:300]}")
print(f"rank 1 SIGSTOPped: exit 3, '{message[:70]}...'")

# (7) An --out that starts with '-' is a directory, not an option of the ranks' command line
# (before: "rank 1 exited with code 2" and nothing said why).
dash = subprocess.run([binary, "run", SMOKE, "--quiet", "--out", "-dash", *SHORT], cwd=out, stdout=subprocess.PIPE,
                      stderr=subprocess.STDOUT, text=True, timeout=180)
if dash.returncode != 0 or not os.path.isfile(os.path.join(out, "-dash", "index.json")):
    fail(f"--out -dash: exit {dash.returncode}\n{dash.stdout[-2000:]}")
print("--out -dash: ran, its results under ./-dash")
