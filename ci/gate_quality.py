#!/usr/bin/env python3
"""How good is the gate, and does it know? A measurement, not a test (minutes; figures depend on
the machine). Called by ci/gate-quality.sh, which documents the modes; standard library only.

slowdowns: rounds of interleaved launches of one scenario -- plain (A, twice a round) and with
  the failpoints slow_<planted>_5pct / 10pct / 20pct (B5, B10, B20; --planted step, optimizer or
  collectives) -- then, from that pool, 20 comparisons per case drawn with a fixed seed from
  distinct launches, at 10 and 5 launches a side, judged by `shardbench compare` under the
  nightly policy with only --metric (tokens_per_s) gated.
  Prints false alarms, detections and the minimum detectable effect (MDE) the gate reported for
  those very comparisons, and whether the MDE predicted the detection (an effect above it caught
  >= 80% of the time, below it rarely). With --auto-trials K, also K pairs of adaptive runs
  (`--repetitions auto:MAX --target-mde 0.10`) of A and B20: launches used, detection.
aa-suite: K launches of a whole suite (one repetition each), then 20 A/A comparisons of R vs R
  launches drawn from them, every metric under the nightly policy (Benjamini-Hochberg over the
  gated sampled metrics): how many comparisons raise any false alarm (family-wise rate).
instructions, spread: ci/gate_quality_instructions.py, ci/gate_quality_spread.py.
"""
import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

MDE_RE = re.compile(r"could have caught >= ([0-9.]+)%")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def launch(bin_, target, out, overrides, extra=()):
    p = run([bin_, "run", target, "--quiet", "--out", out, *extra, *overrides])
    if p.returncode >= 2:
        sys.exit(f"launch failed ({p.returncode}): {' '.join([bin_, 'run', target, out])}\n{p.stderr[-2000:]}")


def results_of(run_dir):
    """instance name -> result JSON of one run directory (via its index)."""
    index = json.load(open(os.path.join(run_dir, "index.json")))
    out = {}
    for e in index["instances"]:
        if e.get("file"):
            out[e["name"]] = json.load(open(os.path.join(run_dir, e["file"])))
    return index, out


def pooled(bin_, launch_dirs, where):
    """The launches pooled into one run directory by `shardbench merge` (one median per launch)."""
    p = run([bin_, "merge", *launch_dirs, "--out", where])
    if p.returncode != 0:
        sys.exit("merge failed: " + p.stderr)
    return where


def compare(bin_, base_dirs, cur_dirs, policy, metric="tokens_per_s", extra=()):
    """(colour, the metric's verdict, its reported MDE or None, console text) for one comparison.

    The metric's verdict is what is measured: a failed check (a learning check on a short run)
    would make the colour RED whatever the timings did."""
    with tempfile.TemporaryDirectory() as t:
        return judge(bin_, pooled(bin_, base_dirs, os.path.join(t, "b")), pooled(bin_, cur_dirs, os.path.join(t, "c")),
                     policy, metric, extra)


def judge(bin_, b, c, policy, metric="tokens_per_s", extra=()):
    """compare of two run directories: (colour, the metric's verdict, its MDE, console text)."""
    p = run([bin_, "compare", b, c, "--policy", policy, *extra])
    if p.returncode not in (0, 1):
        sys.exit("compare failed: " + p.stderr)
    colour = p.stdout.strip().splitlines()[-1].split(":")[0]
    verdict, mde = "no change", None
    for line in p.stdout.splitlines():
        fields = line.split()
        if len(fields) > 1 and fields[1] == metric:
            verdict = next((v for v in ("regression", "improvement", "unjudged", "underpowered") if v in line), verdict)
        if (len(fields) > 1 and fields[1] == metric) or line.startswith("power:"):
            m = MDE_RE.search(line)
            if m:
                mde = float(m.group(1)) / 100
            elif "could not have caught any change" in line:
                mde = math.inf
    return colour, verdict, mde, p.stdout


def tokens_only_policy(policy, where, metric="tokens_per_s"):
    text = open(policy).read() + f'\n  "*": {{gate: false}}\n  {metric}: {{gate: true}}\n'
    open(where, "w").write(text)
    return where


def median_tokens(dirs, metric="tokens_per_s"):
    vals = []
    for d in dirs:
        _, res = results_of(d)
        for r in res.values():
            vals += [m["median"] for m in r["metrics"] if m["name"] == metric]
    return statistics.median(vals)


def slowdowns(a):
    pool = a.pool or tempfile.mkdtemp(prefix="gate-quality-")
    planted = lambda pct: [f"failpoints=[slow_{a.planted}_{pct}pct]"]
    b = lambda pct: f"B{pct}" + ("" if a.planted == "step" else f"-{a.planted}")  # pool directories by variant
    variants = {"A0": [], "A1": [], **{b(pct): planted(pct) for pct in a.percents}}
    print(f"gate-quality: {a.rounds} rounds of {', '.join(variants)} launches of {a.scenario} (planted: slow_{a.planted}_*pct)"
          f" into {pool}", flush=True)
    for r in range(a.rounds):
        order = list(variants.items())
        for v, fp in (order if r % 2 == 0 else reversed(order)):  # drift hits every variant alike
            out = os.path.join(pool, f"{v}-{r}")
            if not os.path.exists(os.path.join(out, "index.json")):
                launch(a.bin, a.scenario, out, ["checks.loss_parity=false", *a.overrides, *fp])
    dirs = lambda v: [os.path.join(pool, f"{v}-{r}") for r in range(a.rounds)]
    A = dirs("A0") + dirs("A1")
    B = {pct: dirs(b(pct)) for pct in a.percents}
    policy = tokens_only_policy(a.policy, os.path.join(pool, f"{a.metric}-only-policy.yaml"), a.metric)
    base = median_tokens(A, a.metric)
    print(f"pool: {len(A)} A launches, {a.rounds} of each B; median tokens/s A {base:.0f}, " +
          ", ".join(f"B{k} {median_tokens(v, a.metric):.0f} ({median_tokens(v, a.metric) / base - 1:+.1%})" for k, v in B.items()), flush=True)
    rng = random.Random(20261203)
    predictions = []  # (effect, mde, detected)
    for reps in ([] if a.paired_only else a.sides):
        if 2 * reps > len(A) or reps >= a.rounds:  # every draw of all B launches would be the same comparison
            print(f"{reps} launches a side: pool too small")
            continue
        line = [f"{reps:2d} launches a side:"]
        for case in ["A/A"] + a.percents:
            outcomes = []
            for _ in range(20):
                if case == "A/A":
                    s = rng.sample(A, 2 * reps)
                    outcomes.append(compare(a.bin, s[:reps], s[reps:], policy, a.metric))
                else:
                    outcomes.append(compare(a.bin, rng.sample(A, reps), rng.sample(B[case], reps), policy, a.metric))
            # A two-sided test: on A/A any flag is a false alarm; a slowdown must be a regression.
            alarms = sum(o[1] in (("regression", "improvement") if case == "A/A" else ("regression",)) for o in outcomes)
            mdes = [o[2] for o in outcomes if o[2] is not None]
            mde_text = (f"reported MDE median {statistics.median(mdes):.1%} [{min(mdes):.1%}, {max(mdes):.1%}]" if mdes else "no MDE")
            if case == "A/A":
                line.append(f"A/A false alarms {alarms}/20 ({mde_text})")
            else:
                line.append(f"{case}% slowdown detected {alarms}/20 ({mde_text})")
                # The effect the failpoint really had (its spin is not exact on a busy host):
                # the pool's median ratio, as a relative slowdown of tokens/s.
                effect = base / median_tokens(B[case], a.metric) - 1
                for _, verdict, mde, _ in outcomes:
                    if mde is not None:
                        predictions.append((effect, mde, verdict == "regression"))
        print("; ".join(line), flush=True)
    # The same pool paired by round (ci/gate_quality_paired.py): what interleaving buys when the
    # test knows which launches ran side by side.
    import gate_quality_paired
    for reps in a.sides:
        if reps < a.rounds:
            print(gate_quality_paired.paired_report(a, dirs("A0"), dirs("A1"), {pct: dirs(b(pct)) for pct in a.percents},
                                                    reps, policy), flush=True)
    above = [d for e, m, d in predictions if e >= m]
    below = [d for e, m, d in predictions if e < m]
    if predictions:
        print(f"MDE as a prediction (effects as measured in the pool): at or above the reported MDE detected "
              f"{sum(above)}/{len(above)} ({(sum(above) / len(above)) if above else float('nan'):.0%}); below it "
              f"{sum(below)}/{len(below)} ({(sum(below) / len(below)) if below else float('nan'):.0%})", flush=True)
    for t in range(a.auto_trials):
        sides = {}
        for v, fp in (("A", []), (b(20), planted(20))):
            out = os.path.join(pool, f"auto-{v}-{t}")
            if not os.path.exists(os.path.join(out, "index.json")):
                launch(a.bin, a.scenario, out, ["checks.loss_parity=false", *a.overrides, *fp],
                       ["--repetitions", f"auto:{a.auto_max}", "--target-mde", "0.10", "--policy", policy])
            sides[v] = out
        used = {v: json.load(open(os.path.join(d, "index.json")))["instances"][0] for v, d in sides.items()}
        _, verdict, mde, _ = judge(a.bin, sides["A"], sides[b(20)], policy, a.metric)
        print(f"auto trial {t}: launches A {used['A']['repetitions']} ({used['A']['adaptive']['stopped']}), "
              f"B20 {used[b(20)]['repetitions']} ({used[b(20)]['adaptive']['stopped']}); {a.metric}: {verdict}, "
              f"reported MDE {mde if mde is None else f'{mde:.1%}'}", flush=True)


def aa_suite(a):
    pool = a.pool or tempfile.mkdtemp(prefix="gate-quality-aa-")
    print(f"gate-quality aa-suite: {a.launches} launches of {a.suite} into {pool}", flush=True)
    for k in range(a.launches):
        out = os.path.join(pool, f"L{k}")
        if not os.path.exists(os.path.join(out, "index.json")):
            launch(a.bin, a.suite, out, a.overrides, ["--repetitions", "1"])
    launches = [os.path.join(pool, f"L{k}") for k in range(a.launches)]
    rng = random.Random(20261203)
    colours, families, alarms_by_metric, median_mdes = [], [], {}, []
    for _ in range(20):
        s = rng.sample(launches, 2 * a.reps)
        colour, _, _, text = compare(a.bin, s[:a.reps], s[a.reps:], a.policy)
        colours.append(colour)
        power = re.search(r"the median one could have caught >= ([0-9.]+)%", text)
        if power:
            median_mdes.append(float(power.group(1)) / 100)
        m = re.search(r"Benjamini-Hochberg over (\d+)", text)
        families.append(int(m.group(1)) if m else 0)
        for line in text.splitlines():
            if line.rstrip().endswith("regression") or " regression;" in line:
                key = " ".join(line.split()[:2])
                alarms_by_metric[key] = alarms_by_metric.get(key, 0) + 1
    print(f"A/A over the whole suite, {a.reps} vs {a.reps} launches, 20 pairs: RED {colours.count('RED')}/20, "
          f"GREEN {colours.count('GREEN')}, UNJUDGED {colours.count('UNJUDGED')}, UNDERPOWERED {colours.count('UNDERPOWERED')}; "
          f"family of {statistics.median(families):.0f} gated sampled metrics per comparison")
    if median_mdes:
        print(f"the median gated metric could have caught >= {statistics.median(median_mdes):.1%} "
              f"(over the comparisons: {min(median_mdes):.1%} - {max(median_mdes):.1%})")
    for k, v in sorted(alarms_by_metric.items(), key=lambda x: -x[1]):
        print(f"  false alarm: {k} ({v}x)")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["slowdowns", "aa-suite", "instructions", "spread"])
    p.add_argument("--bin", default=os.environ.get("SHARDBENCH_BIN", os.path.join(root, "build", "shardbench")))
    p.add_argument("--policy", default=os.path.join(root, "ci", "nightly-policy.yaml"))
    p.add_argument("--pool", help="keep launches here (reused when the script is run again)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--scenario", default=os.path.join(root, "scenarios", "smoke.yaml"))
    p.add_argument("--auto-trials", type=int, default=0)
    p.add_argument("--auto-max", type=int, default=20)
    p.add_argument("--suite", default="nightly")
    p.add_argument("--launches", type=int, default=10)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--planted", choices=["step", "optimizer", "collectives"], default="step",
                   help="slowdowns: which failpoints slow B down (slow_<planted>_5pct / 10pct / 20pct)")
    p.add_argument("--percents", type=lambda v: [int(x) for x in v.split(",")], default=[5, 10, 20],
                   help="slowdowns: which of the planted slowdowns (5,10,20) to launch")
    p.add_argument("--sides", type=lambda v: [int(x) for x in v.split(",")], default=[10, 5],
                   help="slowdowns: launches a side of the comparisons drawn from the pool")
    p.add_argument("--paired-only", action="store_true", help="slowdowns: only the paired analysis of the pool")
    p.add_argument("--metric", default="tokens_per_s", help="slowdowns: the throughput metric gated (higher is better)")
    p.add_argument("--planted-launches", type=int, default=5, help="instructions: launches of each planted slowdown")
    p.add_argument("--tolerance", type=float, default=0.01, help="instructions: the gate's tolerance on instructions_per_step")
    argv = sys.argv[1:]
    overrides = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    a.overrides = overrides  # key=value for every launch, after --
    if a.mode == "instructions":
        import gate_quality_instructions  # its own file: the counted launches and their figures
        gate_quality_instructions.instructions(a)
    elif a.mode == "spread":
        import gate_quality_spread  # its own file: timing variants and per-launch estimators
        gate_quality_spread.spread(a)
    else:
        (slowdowns if a.mode == "slowdowns" else aa_suite)(a)


if __name__ == "__main__":
    main()
