"""The malformed-input corpus (tests/malformed/cases.py): every case runs shardbench on bad input
and must end with the exit code it lists (2 bad input, 3 infrastructure), a message naming the
file (and the field, where one is at fault), no "internal error", within its time bound; and a
run directory written before the corpus must be exactly as it was after it.

    run_corpus.py SHARDBENCH SOURCE_DIR WORK_DIR [CASE_SUBSTRING]

Two cases at a time (SHARDBENCH_CORPUS_JOBS sets how many).
"""
import concurrent.futures
import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import cases  # noqa: E402

binary, source, work = (os.path.abspath(a) for a in sys.argv[1:4])
only = sys.argv[4] if len(sys.argv) > 4 else ""
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
SMOKE = os.path.join(source, "scenarios", "smoke.yaml")

# A run directory that exists before the corpus: every case that writes results is pointed at it.
previous = os.path.join(work, "previous")
subprocess.run([binary, "run", SMOKE, "--quiet", "--out", previous, "train.steps=2", "train.warmup_steps=0"], check=True,
               stdout=subprocess.DEVNULL)


def snapshot(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


before = snapshot(previous)
ctx = {"work": work, "source": source, "smoke": SMOKE, "previous": previous, "binary": binary}
# Cases run two at a time (the corpus under ASan is a CI stage; serially it took ~4 min). A `run`
# pointed at the shared earlier run directory takes its lock, so those run one at a time: two at
# once would see each other's lock instead of the refusal they test.
previous_lock = threading.Lock()


def run_case(case):
    case_dir = os.path.join(work, "cases", case["name"])
    os.makedirs(case_dir, exist_ok=True)
    for rel, content in case.get("files", {}).items():
        path = os.path.join(case_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(content, str):
            content = content.replace("{case}", case_dir).encode()
        with open(path, "wb") as f:
            f.write(content)
    if "setup" in case:
        case["setup"](case_dir)
    argv = [a.replace("{case}", case_dir) for a in case["argv"]]
    bound = case.get("timeout", 30)
    uses_previous = argv[:1] == ["run"] and previous in argv
    with previous_lock if uses_previous else contextlib.nullcontext():
        started = time.time()
        # Its own session, so that a hang is ended with everything it started (ranks included).
        p = subprocess.Popen([binary, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                             env=dict(os.environ, **case.get("env", {})))
        try:
            text, code = p.communicate(timeout=bound)[0].decode(errors="replace"), p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            text, code = f"(no end within {bound} s)", "hang"
        took = time.time() - started
    want = case.get("exit", 2)
    text_in_dir = text.replace(case_dir, "{case}")
    problems = []
    if code != want:
        problems.append(f"exit {code}, expected {want}")
    if "internal error" in text:
        problems.append("internal error")
    for sanitizer in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):  # an ASan/UBSan build
        if sanitizer in text:
            problems.append(sanitizer.rstrip(":"))
    for needle in case.get("says", []):
        if needle.replace("{case}", case_dir) not in text:
            problems.append(f"message lacks {needle!r}")
    failure = None
    if problems:
        failure = (f"{case['name']}: {'; '.join(problems)}\n    argv: {' '.join(argv)}\n    output: "
                   f"{text_in_dir.strip()[-400:]}")
    return took, case["name"], failure


selected = [c for c in cases(ctx) if not only or only in c["name"]]
jobs = int(os.environ.get("SHARDBENCH_CORPUS_JOBS", "2"))
with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    outcomes = list(pool.map(run_case, selected))
ran = len(outcomes)
slowest = max(((took, name) for took, name, _ in outcomes), default=(0.0, ""))
failures = [failure for _, _, failure in outcomes if failure]

after = snapshot(previous)
changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k) and k != ".shardbench.lock")
if changed:
    failures.append(f"the earlier run directory changed: {changed}")
for f in failures:
    print("FAIL", f)
print(f"{ran} malformed-input cases, {len(failures)} failing; slowest {slowest[0]:.1f} s ({slowest[1]})")
sys.exit(1 if failures else 0)
