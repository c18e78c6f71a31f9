#!/usr/bin/env bash
# `shardbench export` read by the tools it is for, and Google Benchmark JSON read by ours:
#  - Google Benchmark's own tools/compare.py (Debian's libbenchmark-tools) compares two exported
#    smoke runs and names their metrics;
#  - `shardbench compare` reads the same exports back (a verdict, not bad input);
#  - Bencher's BMF and github-action-benchmark's lists have the shapes those tools take;
#  - scripts/micro.sh, briefly, writes a directory of Google Benchmark files that compare reads;
#  - an existing --out is refused (exit 2), nothing overwritten.
#   tests/end_to_end/exports.sh SHARDBENCH PYTHON OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$1 python=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
fail() { echo "exports: $*"; exit 1; }

for run in a b; do
  "$bin" run "$root/scenarios/smoke.yaml" --quiet --repetitions 2 --out "$out/$run" train.steps=4 train.warmup_steps=1 >/dev/null
  "$bin" export "$out/$run" --format gbench --out "$out/$run.gbench.json"
done

compare_py=/usr/share/benchmark/compare.py
[ -f "$compare_py" ] || fail "$compare_py missing (scripts/apt-packages.txt installs libbenchmark-tools)"
PYTHONPATH=/usr/share/benchmark "$python" "$compare_py" -a benchmarks "$out/a.gbench.json" "$out/b.gbench.json" \
  >"$out/compare_py.txt" 2>&1 || { cat "$out/compare_py.txt"; fail "compare.py could not compare our exports"; }
grep -q "smoke/step_time" "$out/compare_py.txt" || { cat "$out/compare_py.txt"; fail "compare.py does not list smoke/step_time"; }
grep -q "smoke/step_time_pvalue" "$out/compare_py.txt" || { cat "$out/compare_py.txt"; fail "compare.py ran no U test on the repetitions"; }

rc=0
"$bin" compare "$out/a.gbench.json" "$out/b.gbench.json" --quiet >"$out/compare.txt" 2>&1 || rc=$?
[ "$rc" -le 1 ] || { cat "$out/compare.txt"; fail "shardbench compare did not read its own gbench export (exit $rc)"; }
grep -qE "^(GREEN|RED|UNJUDGED|UNDERPOWERED)" "$out/compare.txt" || { cat "$out/compare.txt"; fail "no verdict"; }

"$bin" export "$out/a" --format bencher --out "$out/a.bencher.json"
"$bin" export "$out/a" --format gab-smaller --out "$out/a.gab-smaller.json"
"$bin" export "$out/a" --format gab-bigger --out "$out/a.gab-bigger.json"
"$python" - "$out" <<'PY'
import json, sys
out = sys.argv[1]
bmf = json.load(open(f"{out}/a.bencher.json"))
assert set(bmf) == {"smoke"}, bmf.keys()
for measure, v in bmf["smoke"].items():  # Bencher Metric Format: benchmark -> measure -> value (+ bounds)
    assert set(v) <= {"value", "lower_value", "upper_value"} and isinstance(v["value"], (int, float)), (measure, v)
    assert v["lower_value"] <= v["value"] <= v["upper_value"], (measure, v)
for direction in ("smaller", "bigger"):
    entries = json.load(open(f"{out}/a.gab-{direction}.json"))
    assert entries, direction
    for e in entries:  # github-action-benchmark's custom*IsBetter: name, unit, value; range and extra optional
        assert isinstance(e["name"], str) and isinstance(e["unit"], str) and isinstance(e["value"], (int, float)), e
names = {e["name"] for e in json.load(open(f"{out}/a.gab-bigger.json"))}
assert "smoke/tokens_per_s" in names, names
PY

rc=0
"$bin" export "$out/a" --format bencher --out "$out/a.bencher.json" 2>"$out/exists.txt" || rc=$?
[ "$rc" = 2 ] && grep -q "already exists" "$out/exists.txt" || fail "an existing --out was not refused with exit 2 (got $rc)"

MICRO_REPETITIONS=2 MICRO_MIN_TIME=0.01 "$root/scripts/micro.sh" "$out/micro" \
  --benchmark_filter='EngineOverhead/model:tiny/lora:0|BM_Copy|BM_Crc32|BM_AtNormal' >"$out/micro.txt"
rc=0
"$bin" compare "$out/micro" "$out/micro" >"$out/micro-compare.txt" 2>&1 || rc=$?
[ "$rc" -le 1 ] || { cat "$out/micro-compare.txt"; fail "compare could not read scripts/micro.sh's directory (exit $rc)"; }
grep -q "engine_overhead/BM_EngineOverhead/model:tiny/lora:0/batch:4/seq:64" "$out/micro-compare.txt" ||
  fail "compare does not name the engine_overhead benchmark"
echo "exports: compare.py, Bencher and github-action-benchmark shapes, gbench imports, micro.sh: all read"
