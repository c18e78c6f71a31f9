#!/usr/bin/env bash
# The HTML dashboard opened in headless Chromium: it must render without a single console
# error, draw its charts, and show hostile scenario text as text. Inputs are a real smoke run
# plus copies of it edited into a regression and a nightly history with a step (fast and
# deterministic). Artifacts (the dashboard, its DOM, a screenshot) stay in OUT for CI.
#   tests/end_to_end/dashboard_in_chromium.sh SHARDBENCH_BINARY OUT_DIR
set -euo pipefail
bin=$1 out=$2
rm -rf "$out" && mkdir -p "$out"
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "chromium not installed (scripts/setup.sh installs it)"; exit 1; }

"$bin" run "$(dirname "$0")/../../scenarios/smoke.yaml" --out "$out/base" --quiet --trace train.steps=4 'name=<img src=x onerror=alert(1)>'
python3 - "$out" <<'PY'
import json, os, shutil, sys, copy
out = sys.argv[1]
base = os.path.join(out, "base")
index = json.load(open(os.path.join(base, "index.json")))
def edited(dst, factor, reps=5):
    shutil.copytree(base, dst)
    for inst in index["instances"]:
        if not inst["file"]:
            continue
        path = os.path.join(dst, inst["file"])
        r = json.load(open(path))
        for m in r["metrics"]:
            if m["name"] == "tokens_per_s":
                med = m["median"] * factor
                m["repetition_medians"] = [med * (1 + 0.003 * ((i * 7) % 5 - 2)) for i in range(reps)]
                m["median"] = sorted(m["repetition_medians"])[reps // 2]
        json.dump(r, open(path, "w"))
edited(os.path.join(out, "base5"), 1.0)
edited(os.path.join(out, "current"), 0.8)  # tokens/s down 20%: a regression
os.makedirs(os.path.join(out, "history"))
for n in range(10):
    d = os.path.join(out, "history", f"run-{n:02d}")
    edited(d, 1.0 if n < 6 else 0.8)
    for inst in index["instances"]:
        if inst["file"]:
            p = os.path.join(d, inst["file"]); r = json.load(open(p))
            r["started_at"] = f"2026-11-{n + 1:02d}T02:00:00Z"
            json.dump(r, open(p, "w"))
PY

rc=0
"$bin" compare "$out/base5" "$out/current" --html "$out/dashboard.html" --markdown "$out/compare.md" \
  --junit "$out/junit.xml" --history "$out/history" --quiet || rc=$?
[ "$rc" = 1 ] || { echo "compare should be red (exit 1) on a 20% tokens/s drop, got $rc"; exit 1; }
grep -qF "tokens\\_per\\_s" "$out/compare.md" || { echo "compare.md lacks the regressed metric"; exit 1; }

render() {  # $1: html, $2: name of the outputs
  timeout 120 "$chromium" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --enable-logging=stderr --v=0 \
    --virtual-time-budget=10000 --window-size=1400,4000 --dump-dom "file://$1" >"$out/$2.dom.html" 2>"$out/$2.log" || true
  timeout 120 "$chromium" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --virtual-time-budget=10000 \
    --window-size=1400,4000 --screenshot="$out/$2.png" "file://$1" >/dev/null 2>&1 || true
  if grep -E "CONSOLE|Uncaught" "$out/$2.log"; then echo "$2: console output above (errors or warnings)"; exit 1; fi
  grep -q 'data-rendered="yes"' "$out/$2.dom.html" || { echo "$2: the page's script did not finish"; exit 1; }
  if grep -q 'data-errors=' "$out/$2.dom.html"; then grep -o 'data-errors="[^"]*"' "$out/$2.dom.html"; exit 1; fi
  charts=$(grep -o 'data-charts="[0-9]*"' "$out/$2.dom.html" | grep -o '[0-9]*')
  [ "${charts:-0}" -ge "$3" ] || { echo "$2: $charts charts drawn, expected at least $3"; exit 1; }
  [ -s "$out/$2.png" ] || { echo "$2: no screenshot"; exit 1; }
  echo "$2: rendered, $charts charts, no console errors"
}
render "$out/dashboard.html" compare 5  # the interval chart, memory, per-rank step times and loss of the instance, one trend
# The hostile name is shown as text, never parsed: no <img> element exists in the page.
if grep -q '<img' "$out/compare.dom.html"; then echo "a scenario name was parsed as markup"; exit 1; fi
grep -q '&lt;img src=x onerror=alert(1)&gt;' "$out/compare.dom.html" || { echo "the hostile name is not shown as text"; exit 1; }

"$bin" history "$out/history" --html "$out/history.html" --markdown "$out/history.md" | tee "$out/history.txt"
grep -q "tokens_per_s: shift at run 6" "$out/history.txt" || { echo "the step at run 6 was not found"; exit 1; }
render "$out/history.html" history 5  # every metric of the instance with the alert, side by side
grep -q '>Alerts<' "$out/history.dom.html" || { echo "the history page lists no alerts"; exit 1; }
grep -q 'tokens_per_s shifted for the worse' "$out/history.dom.html" || { echo "the tokens/s drop is not an alert"; exit 1; }
grep -q '2026-11-07' "$out/history.dom.html" || { echo "the history page does not date the runs"; exit 1; }
# Every link on the page resolves to a file that exists (each run's dashboard and JSON).
links=$(grep -o 'href="[^"]*"' "$out/history.dom.html" | sed 's/^href="//; s/"$//')
[ "$(echo "$links" | grep -c dashboard.html)" = 10 ] || { echo "expected a dashboard link per run:"; echo "$links"; exit 1; }
for link in $links; do
  [ -f "$out/$(python3 -c 'import sys, urllib.parse; print(urllib.parse.unquote(sys.argv[1]))' "$link")" ] ||
    { echo "the history page links $link, which does not exist"; exit 1; }
done

# Every run directory carries its own page (no base): the smoke run's.
render "$out/base/dashboard.html" run 4  # memory, memory over the last step (--trace), per-rank step times, loss
if grep -q '<img' "$out/run.dom.html"; then echo "a scenario name was parsed as markup on the run page"; exit 1; fi
# The memory timeline has its data (rank 0's categories over one step), and the page links the
# trace, which exists beside it.
grep -q '"memory_timeline":{"categories":{' "$out/base/dashboard.html" || { echo "the run page has no memory timeline"; exit 1; }
trace_links=$(grep -o 'href="[^"]*trace.json"' "$out/run.dom.html" | sed 's/^href="//; s/"$//')
[ -n "$trace_links" ] || { echo "the run page links no trace"; exit 1; }
for link in $trace_links; do
  [ -f "$out/base/$(python3 -c 'import sys, urllib.parse; print(urllib.parse.unquote(sys.argv[1]))' "$link")" ] ||
    { echo "the run page links $link, which does not exist"; exit 1; }
done
# The per-rank step-time chart has its data: both smoke ranks' busy-time distributions.
grep -q '"rank":1,"step":' "$out/base/dashboard.html" || { echo "the run page lacks rank 1's step-time distribution"; exit 1; }

# A run that did not end as expected: its page starts with the instance, the expected and actual
# colour and the failed check's detail.
"$bin" run "$(dirname "$0")/../../scenarios/smoke.yaml" --out "$out/diverged" --quiet train.steps=3 train.lr=1e30 >/dev/null || true
render "$out/diverged/dashboard.html" failed_run 0
grep -q 'Not as expected (1 of 1)' "$out/failed_run.dom.html" || { echo "the failed run's page does not lead with it"; exit 1; }
grep -q 'finite' "$out/failed_run.dom.html" || { echo "the failed run's page lacks the failed check's detail"; exit 1; }

# Engines side by side (compare --engines): our two sharding engines on one scenario.
"$bin" run "$(dirname "$0")/../../scenarios/nightly_engines.yaml" --out "$out/engines_run" --quiet world_size=2 lora.enabled=true \
  train.steps=3 >/dev/null
"$bin" compare "$out/engines_run" --engines --html "$out/engines.html" --markdown "$out/engines.md" >/dev/null
grep -qF "| flat | per\_param |" "$out/engines.md" || { echo "engines.md lacks the flat/per_param pair"; exit 1; }
render "$out/engines.html" engines 2  # the ratio chart and at least one instance's chart
grep -q 'Engines side by side' "$out/engines.dom.html" || { echo "the engines page lacks its section"; exit 1; }
