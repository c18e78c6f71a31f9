#!/usr/bin/env bash
# ci/ab.sh end to end with the same build on both sides (2 rounds of a one-rank smoke scenario):
# it interleaves, pools each side's launches, compares, and -- 2 launches a side being too few
# for the default policy -- stops at --max-rounds saying it is not confident (UNJUDGED, exit 1).
#   tests/end_to_end/ab_gate.sh OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SHARDBENCH_BIN:-$root/build/shardbench}
out=$1
rm -rf "$out" && mkdir -p "$(dirname "$out")"
rc=0
"$root/ci/ab.sh" "$bin" "$(dirname "$bin")" "$root/scenarios/smoke.yaml" --out "$out" --min-rounds 2 --max-rounds 2 \
  -- world_size=1 train.steps=2 checks.loss_parity=false >"$out.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$out.log"; echo "ab.sh: expected exit 1 (not confident after 2 rounds), got $rc"; exit 1; }
grep -q "^round 2 (2 launches a side" "$out.log" || { cat "$out.log"; echo "no round line"; exit 1; }
grep -q "not confident after 2 rounds: UNJUDGED" "$out.log" || { cat "$out.log"; echo "no verdict line"; exit 1; }
for f in A/round-1 A/round-2 B/round-1 B/round-2 pooled-2/A/index.json compare.md junit.xml dashboard.html; do
  [ -e "$out/$f" ] || { echo "ab.sh did not write $f"; exit 1; }
done
# The pooled side holds both launches of the instance.
python3 - "$out/pooled-2/A/index.json" <<'PY'
import json, sys
index = json.load(open(sys.argv[1]))
assert index["instances"][0]["repetitions"] == 2, index
PY
# The rounds pair: compare --paired (what ab.sh runs) tests them with the signed-rank test.
printf 'defaults:\n  sampled: {min_samples: 2}\n' >"$out.policy.yaml"
paired=$("$bin" compare "$out/pooled-2/A" "$out/pooled-2/B" --paired --policy "$out.policy.yaml" || true)
echo "$paired" | grep -q "Wilcoxon signed-rank p=.*, 2 launches paired by round" || { echo "$paired"; echo "not paired"; exit 1; }
echo "ab.sh: interleaved, pooled, compared (paired by round), not confident as expected"
