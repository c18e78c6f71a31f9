"""ci/gate-quality.sh instructions: how well instructions_per_step gates (called by gate_quality.py).

Launches of one scenario counted under callgrind (profile.instructions=true, 3 steps of which 2
measured): A plain, then each planted CPU-bound slowdown (slow_optimizer_5pct, inside AdamW's
step; slow_collectives_5pct, on Gloo's thread before each collective), then straggler_rank1 (a
rank that sleeps: time without instructions, which the count cannot see). Prints the A/A spread
(every pair of A launches, largest rank), each variant's effect on the count, and 20 comparisons
per case drawn with a fixed seed from distinct launches, judged by `shardbench compare` with only
instructions_per_step gated at --tolerance.
"""
import itertools
import json
import os
import random
import statistics
import tempfile

from gate_quality import launch, results_of, run

COUNTED = ["profile.instructions=true", "train.steps=3", "train.warmup_steps=1", "checks.loss_parity=false"]


def counted(run_dir):
    """The largest rank's instructions per step of a run's only instance."""
    _, res = results_of(run_dir)
    for r in res.values():
        for m in r["metrics"]:
            if m["name"] == "instructions_per_step":
                return m["median"]
    raise SystemExit(f"{run_dir}: no instructions_per_step (did the launch run under callgrind?)")


def instructions_policy(tolerance, where):
    with open(where, "w") as f:
        f.write(f'metrics:\n  "*": {{gate: false}}\n  instructions_per_step: {{gate: true, tolerance: {tolerance}}}\n')
    return where


def verdict(bin_, base, current, policy):
    """instructions_per_step's verdict in `shardbench compare BASE CURRENT`."""
    p = run([bin_, "compare", base, current, "--policy", policy])
    if p.returncode not in (0, 1):
        raise SystemExit("compare failed: " + p.stderr)
    for line in p.stdout.splitlines():
        fields = line.split()
        if len(fields) > 1 and fields[1] == "instructions_per_step":
            return next((v for v in ("regression", "improvement") if v in line), "no change")
    # The console lists changed metrics only; both sides have the metric (counted() read it).
    return "no change"


def launches(a, pool, name, count, extra):
    dirs = []
    for k in range(count):
        out = os.path.join(pool, f"{name}-{k}")
        if not os.path.exists(os.path.join(out, "index.json")):
            launch(a.bin, a.scenario, out, [*COUNTED, *a.overrides, *extra])
        dirs.append(out)
    return dirs


def instructions(a):
    pool = a.pool or tempfile.mkdtemp(prefix="gate-quality-instr-")
    variants = {"slow_optimizer_5pct": a.planted_launches, "slow_collectives_5pct": a.planted_launches,
                "straggler_rank1": 2}
    print(f"gate-quality instructions: {a.launches} A launches of {a.scenario}, then {variants} "
          f"(counted: {' '.join(COUNTED + a.overrides)}) into {pool}", flush=True)
    A = launches(a, pool, "A", a.launches, [])
    B = {fp: launches(a, pool, fp, n, [f"failpoints=[{fp}]"]) for fp, n in variants.items()}
    count = {d: counted(d) for d in A + [d for dirs in B.values() for d in dirs]}
    base = statistics.median(count[d] for d in A)
    spreads = [abs(count[x] - count[y]) / min(count[x], count[y]) for x, y in itertools.combinations(A, 2)]
    print(f"A: median {base:,.0f} instructions a step; A/A spread over {len(spreads)} pairs: max {max(spreads):.4%}, "
          f"median {statistics.median(spreads):.4%}", flush=True)
    policy = instructions_policy(a.tolerance, os.path.join(pool, "instructions-policy.yaml"))
    rng = random.Random(20261206)
    aa = [verdict(a.bin, *rng.sample(A, 2), policy) for _ in range(20)]
    print(f"A/A, tolerance {a.tolerance:.2%}: false alarms {sum(v != 'no change' for v in aa)}/20", flush=True)
    for fp, dirs in B.items():
        effects = [count[d] / base - 1 for d in dirs]
        found = [verdict(a.bin, rng.choice(A), rng.choice(dirs), policy) for _ in range(20)]
        print(f"{fp}: instructions {statistics.median(effects):+.3%} [{min(effects):+.3%}, {max(effects):+.3%}] over "
              f"{len(dirs)} launches; caught as a regression {found.count('regression')}/20", flush=True)
    summary = {"base": base, "aa_spread_max": max(spreads), "counts": {os.path.basename(d): c for d, c in count.items()}}
    with open(os.path.join(pool, "instructions-summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
