"""ci/gate-quality.sh spread: which way of timing a launch moves least from launch to launch (called by
gate_quality.py).

Rounds of interleaved launches of one scenario, one per timing variant a round (plain; timing.pin_cores;
timing.calibrate; both), then for every variant and every per-launch estimator the launch-to-launch
spread (sd of log values, over the variant's launches) and the minimum detectable effect it implies
at 10 launches a side (two-sided 5%, 80% power: 2.8 x sd x sqrt(2/10)). Estimators, each one number
per launch from the measured steps: the median of tokens/s (what the gate reads today), its 75th
percentile (the fast mode of bimodal steps), the mean of the fastest half, and the median of
step_time_calibrated (the step over the calibration kernel timed after it, where measured).
"""
import math
import os
import statistics
import tempfile

from gate_quality import launch, results_of

VARIANTS = {"plain": [], "pinned": ["timing.pin_cores=true"], "calibrated": ["timing.calibrate=true"],
            "pinned+calibrated": ["timing.pin_cores=true", "timing.calibrate=true"]}


def quantile(values, q):
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (pos - lo)


def estimators(result):
    """name -> one figure per launch, oriented so that higher is faster."""
    samples = {m["name"]: m["samples"] for m in result["metrics"]}
    tokens = samples["tokens_per_s"]
    fast = sorted(tokens, reverse=True)[:max(1, len(tokens) // 2)]
    out = {"median": statistics.median(tokens), "p75": quantile(tokens, 0.75), "fast_half_mean": statistics.mean(fast)}
    if "step_time_calibrated" in samples:
        out["calibrated_median"] = 1 / statistics.median(samples["step_time_calibrated"])
    return out


def spread(a):
    pool = a.pool or tempfile.mkdtemp(prefix="gate-quality-spread-")
    print(f"gate-quality spread: {a.rounds} rounds of {', '.join(VARIANTS)} launches of {a.scenario} into {pool}",
          flush=True)
    figures = {v: {} for v in VARIANTS}
    for r in range(a.rounds):
        order = list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))  # drift hits every variant alike
        for v in order:
            out = os.path.join(pool, f"{v}-{r}")
            if not os.path.exists(os.path.join(out, "index.json")):
                launch(a.bin, a.scenario, out, ["checks.loss_parity=false", *a.overrides, *VARIANTS[v]])
            _, res = results_of(out)
            for name, value in estimators(next(iter(res.values()))).items():
                figures[v].setdefault(name, []).append(value)
    print(f"{'variant':18} {'estimator':18} {'log-sd':>7} {'MDE@10':>7}  median")
    for v, by in figures.items():
        for name, values in by.items():
            sd = statistics.stdev(math.log(x) for x in values)
            print(f"{v:18} {name:18} {sd:7.1%} {2.8 * sd * math.sqrt(2 / 10):7.1%}  {statistics.median(values):.4g}")
