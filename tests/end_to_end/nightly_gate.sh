#!/usr/bin/env bash
# ci/nightly.sh end to end on the smoke suite: the first night records a baseline and exits 0;
# the second compares with it and writes every report, but 2 repetitions a side are too few to
# judge the timings: UNJUDGED, exit 1 (the same comparison under a policy that accepts that as
# a warning is GREEN, exit 0); a third night with a changed exact metric (a LoRA rank change
# doubles the adapters' bytes) is RED, exit 1, and says why.
#   tests/end_to_end/nightly_gate.sh OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
rm -rf "$out" && mkdir -p "$out"
night() { "$root/ci/nightly.sh" --suite smoke --history "$out/history" --reports "$out/reports-$1" --repetitions 2 --checks none -- train.steps=2 "${@:2}"; }

night 1 >"$out/night1.log" 2>&1 || { cat "$out/night1.log"; echo "night 1 should record and exit 0"; exit 1; }
grep -q "baseline recorded" "$out/night1.log"
rc=0
night 2 >"$out/night2.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$out/night2.log"; echo "night 2 (2 repetitions a side) should be UNJUDGED with exit 1, got $rc"; exit 1; }
for f in compare.md junit.xml dashboard.html history.md; do
  [ -s "$out/reports-2/$f" ] || { echo "night 2 did not write $f"; exit 1; }
done
grep -q "UNJUDGED: 0 regressions" "$out/reports-2/compare.md" || { head -3 "$out/reports-2/compare.md"; echo "night 2 not UNJUDGED"; exit 1; }
runs=("$out"/history/run-*)
printf 'insufficient_data: warn\n' >"$out/warn-policy.yaml"
"${SHARDBENCH_BIN:-$root/build/shardbench}" compare "${runs[0]}" "${runs[1]}" --policy "$out/warn-policy.yaml" --quiet >"$out/warn.log" ||
  { cat "$out/warn.log"; echo "the same comparison with insufficient_data: warn should be green"; exit 1; }
grep -q "^GREEN: .*unjudged reported only" "$out/warn.log" || { cat "$out/warn.log"; echo "warn policy: no GREEN with the warning"; exit 1; }
rc=0
night 3 lora.r=32 >"$out/night3.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$out/night3.log"; echo "night 3 (adapters doubled) should be red with exit 1, got $rc"; exit 1; }
grep -qF "params\\_trainable" "$out/reports-3/compare.md" || { echo "night 3's report does not name the changed metric"; exit 1; }
echo "nightly gate: record, green, red as expected"
