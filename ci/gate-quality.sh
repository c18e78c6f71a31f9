#!/usr/bin/env bash
# How good is the nightly gate? A measurement, not a test (it takes minutes and its figures
# depend on the machine). Runs a scenario in interleaved rounds -- plain (A) twice, then with
# failpoint slow_step_5pct and slow_step_10pct (B5, B10) -- one launch each, so drift hits all
# alike. Then, from that pool of launches, makes 20 comparisons per case, each from distinct
# launches drawn with a fixed seed: A vs A (false alarms), A vs B5 and A vs B10 (detections),
# at 10 and at 5 repetitions a side, judged by `shardbench compare` under the nightly policy on
# tokens_per_s. Prints the rates.
#
#   ci/gate-quality.sh [ROUNDS (default 20)] [SCENARIO (default scenarios/smoke.yaml)] [-- overrides]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SHARDBENCH_BIN:-$root/build/shardbench}
rounds=${1:-20} scenario=${2:-$root/scenarios/smoke.yaml}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
overrides=("$@")
pool=$(mktemp -d)
echo "gate-quality: $rounds rounds of A, A, B5, B10 launches into $pool"
for ((r = 0; r < rounds; r++)); do
  for variant in A0 A1 B5 B10; do
    fp=()
    [ "$variant" = B5 ] && fp=('failpoints=[slow_step_5pct]')
    [ "$variant" = B10 ] && fp=('failpoints=[slow_step_10pct]')
    "$bin" run "$scenario" --quiet --out "$pool/$variant-$r" checks.loss_parity=false "${overrides[@]}" "${fp[@]}" >/dev/null
  done
done
python3 - "$bin" "$pool" "$rounds" "$root/ci/nightly-policy.yaml" <<'PY'
import json, glob, os, random, subprocess, sys, tempfile
bin, pool, rounds, policy = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def launches(prefix):
    out = []
    for d in sorted(glob.glob(os.path.join(pool, prefix + "-*"))):
        f = [x for x in glob.glob(os.path.join(d, "*.json")) if not x.endswith("index.json")][0]
        out.append(json.load(open(f)))
    return out

A = launches("A0") + launches("A1")
B = {5: launches("B5"), 10: launches("B10")}

def merged(results, where):
    """One result with each launch's median of every sampled metric as a repetition sample."""
    r = json.loads(json.dumps(results[0]))
    for m in r["metrics"]:
        if m["kind"] != "sampled":
            continue
        meds = [next(x for x in res["metrics"] if x["name"] == m["name"])["median"] for res in results]
        m["repetition_medians"] = meds
        m["median"] = sorted(meds)[len(meds) // 2]
    os.makedirs(where, exist_ok=True)
    json.dump(r, open(os.path.join(where, "result.json"), "w"))
    return where

def verdict(base, cur):
    with tempfile.TemporaryDirectory() as t:
        b, c = merged(base, os.path.join(t, "b")), merged(cur, os.path.join(t, "c"))
        pol = os.path.join(t, "policy.yaml")
        # Only tokens_per_s is judged here (the other metrics' gates are not what is measured).
        open(pol, "w").write(open(policy).read() + '\n  "*": {gate: false}\n  tokens_per_s: {gate: true}\n')
        p = subprocess.run([bin, "compare", b, c, "--policy", pol, "--quiet"], capture_output=True, text=True)
        if p.returncode not in (0, 1):
            sys.exit("compare failed: " + p.stderr)
        return p.returncode == 1

rng = random.Random(20261202)
print(f"pool: {len(A)} A launches, {len(B[5])} B5, {len(B[10])} B10; tokens/s medians "
      f"A {sorted(x['metrics'][1]['median'] for x in A)[len(A)//2]:.0f}, "
      f"B5 {sorted(x['metrics'][1]['median'] for x in B[5])[len(B[5])//2]:.0f}, "
      f"B10 {sorted(x['metrics'][1]['median'] for x in B[10])[len(B[10])//2]:.0f}")
for reps in (10, 5):
    if 2 * reps > len(A) or reps > len(B[5]):
        print(f"{reps} reps: pool too small"); continue
    aa = sum(verdict(*(lambda s: (s[:reps], s[reps:2 * reps]))(rng.sample(A, 2 * reps))) for _ in range(20))
    d5 = sum(verdict(rng.sample(A, reps), rng.sample(B[5], reps)) for _ in range(20))
    d10 = sum(verdict(rng.sample(A, reps), rng.sample(B[10], reps)) for _ in range(20))
    print(f"{reps:2d} reps/side: A/A false alarms {aa}/20, 5% slowdown detected {d5}/20, 10% slowdown detected {d10}/20")
PY
