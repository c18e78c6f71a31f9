#!/usr/bin/env bash
# ci/nightly.sh end to end on the smoke suite: the first night records a baseline and exits 0;
# the second compares with it, writes every report and exits 0 (same build: exact metrics
# equal, too few repetitions to judge timings); a third night with a changed exact metric
# (a LoRA rank change doubles the adapters' bytes) exits 1 and says why.
#   tests/nightly_gate.sh OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1
rm -rf "$out" && mkdir -p "$out"
night() { "$root/ci/nightly.sh" --suite smoke --history "$out/history" --reports "$out/reports-$1" --repetitions 2 -- train.steps=2 "${@:2}"; }

night 1 >"$out/night1.log" 2>&1 || { cat "$out/night1.log"; echo "night 1 should record and exit 0"; exit 1; }
grep -q "first run recorded" "$out/night1.log"
night 2 >"$out/night2.log" 2>&1 || { cat "$out/night2.log"; echo "night 2 (same build) should be green"; exit 1; }
for f in compare.md junit.xml dashboard.html history.md; do
  [ -s "$out/reports-2/$f" ] || { echo "night 2 did not write $f"; exit 1; }
done
grep -q "GREEN" "$out/reports-2/compare.md"
rc=0
night 3 lora.r=32 >"$out/night3.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$out/night3.log"; echo "night 3 (adapters doubled) should be red with exit 1, got $rc"; exit 1; }
grep -qF "params\\_trainable" "$out/reports-3/compare.md" || { echo "night 3's report does not name the changed metric"; exit 1; }
echo "nightly gate: record, green, red as expected"
