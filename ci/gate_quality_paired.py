"""What a paired design buys (called by gate_quality.py's slowdowns after the gate's unpaired verdicts).

The gate's default test compares two pools of launches as unordered samples (Mann-Whitney U). In a
slowdowns pool every round launched A and each B next to each other, so the launches of one round
share the machine's state of that minute. `compare --paired` (what ci/ab.sh runs) pairs the i-th
launch of each side and tests the rounds' log ratios with Wilcoxon's signed-rank test
(reporters/signed_rank.h), cancelling what drifts between rounds. On the same pool: 20 paired
verdicts per case from the same number of launches a side as the unpaired ones (A0 of a round
against A1 of the same round for A/A, against the planted B for a slowdown), and the spread of the
rounds' differences beside the unpaired spread they replace.
"""
import math
import random
import statistics

from gate_quality import compare, median_tokens


def paired_report(a, a0, a1, planted, reps, policy):
    """One line for `reps` rounds a side: a0, a1 the A launches of each round, planted {pct: launches}."""
    rng = random.Random(20261207)
    rounds = len(a0)
    log = lambda dirs: [math.log(median_tokens([d], a.metric)) for d in dirs]
    la = log(a0)
    line = [f"{reps:2d} launches a side, paired by round (compare --paired):"]
    for case, other in [("A/A", a1)] + list(planted.items()):
        outcomes = []
        for _ in range(20):
            picked = rng.sample(range(rounds), reps)
            outcomes.append(compare(a.bin, [a0[r] for r in picked], [other[r] for r in picked], policy, a.metric,
                                    ["--paired"]))
        alarms = sum(o[1] in (("regression", "improvement") if case == "A/A" else ("regression",)) for o in outcomes)
        mdes = [o[2] for o in outcomes if o[2] is not None]
        mde = f"reported MDE median {statistics.median(mdes):.1%}" if mdes else "no MDE"
        lo = log(other)
        diff_sd = statistics.stdev(x - y for x, y in zip(la, lo))
        unpaired_sd = math.sqrt(statistics.variance(la) + statistics.variance(lo))
        what = "A/A false alarms" if case == "A/A" else f"{case}% slowdown detected"
        line.append(f"{what} {alarms}/20 ({mde}; the rounds' log differences spread {diff_sd:.1%} against "
                    f"{unpaired_sd:.1%} unpaired)")
    return "; ".join(line)
