#!/usr/bin/env bash
# A/B for a pull request where both builds exist, Pinpoint's way: interleave launches of the
# base build and the candidate (A B, then B A, ... so that drift and order hit both alike), one
# launch of every instance of SUITE per build per round; pool each side's launches
# (`shardbench merge`) and compare them after every round from --min-rounds on. Stop as soon as
# the verdict is confident -- RED (a regression or a failed check), or GREEN with every gated
# sampled metric able to catch --target-mde -- or when --max-rounds or --budget-s is spent
# (then the last verdict stands: UNJUDGED or UNDERPOWERED say the budget was too small).
#
#   ci/ab.sh BASE_BUILD CURRENT_BUILD SUITE [--out DIR] [--policy FILE] [--target-mde 0.05]
#            [--min-rounds 5] [--max-rounds 20] [--budget-s 3600] [--unpaired] [-- key=value overrides]
#
# The comparison pairs the two builds' launches of each round (`compare --paired`: Wilcoxon's
# signed-rank test over the rounds' ratios), which cancels what the runner's speed does between
# rounds; --unpaired tests the two pools as unordered samples (Mann-Whitney U) instead.
#
# BASE_BUILD / CURRENT_BUILD: a shardbench binary or a build directory holding one. Writes
# DIR/A/round-N, DIR/B/round-N (every launch), DIR/pooled-N/{A,B} and DIR/compare.md,
# junit.xml, dashboard.html (the final comparison). Exit: 0 GREEN, 1 not green, 2 bad input,
# 3 infrastructure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,20p' "$0" >&2; exit 2; }
[ $# -ge 3 ] || usage
binary() { if [ -d "$1" ]; then echo "$1/shardbench"; else echo "$1"; fi; }
A=$(binary "$1") B=$(binary "$2") suite=$3
shift 3
out=ab-$(date -u +%Y%m%dT%H%M%SZ) policy=$root/ci/nightly-policy.yaml target_mde=0.05
min_rounds=5 max_rounds=20 budget_s=3600 overrides=() paired=(--paired)
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --policy) policy=$2; shift 2 ;;
    --target-mde) target_mde=$2; shift 2 ;;
    --min-rounds) min_rounds=$2; shift 2 ;;
    --max-rounds) max_rounds=$2; shift 2 ;;
    --budget-s) budget_s=$2; shift 2 ;;
    --unpaired) paired=(); shift ;;
    --) shift; overrides=("$@"); break ;;
    *) echo "ci/ab.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
for bin in "$A" "$B"; do [ -x "$bin" ] || { echo "ci/ab.sh: $bin is not a shardbench binary" >&2; exit 2; }; done
[ "$min_rounds" -ge 2 ] && [ "$max_rounds" -ge "$min_rounds" ] || { echo "ci/ab.sh: need 2 <= --min-rounds <= --max-rounds" >&2; exit 2; }
[ -e "$out" ] && { echo "ci/ab.sh: $out exists; choose a new --out" >&2; exit 2; }
mkdir -p "$out/A" "$out/B" "$out/logs"

launch() {  # side round
  local bin=$A; [ "$1" = B ] && bin=$B
  local rc=0
  "$bin" run "$suite" --repetitions 1 --quiet --out "$out/$1/round-$2" "${overrides[@]}" >"$out/logs/$1-round-$2.log" 2>&1 || rc=$?
  if [ "$rc" -ge 2 ]; then
    echo "ci/ab.sh: build $1 could not run round $2 (exit $rc); see $out/logs/$1-round-$2.log" >&2
    exit "$rc"
  fi
}

verdict=UNJUDGED gate=1 rounds_run=0
for ((round = 1; round <= max_rounds; round++)); do
  rounds_run=$round
  if ((round % 2)); then launch A "$round"; launch B "$round"; else launch B "$round"; launch A "$round"; fi
  ((round < min_rounds)) && continue
  pooled=$out/pooled-$round
  "$B" merge "$out"/A/round-* --out "$pooled/A" >/dev/null
  "$B" merge "$out"/B/round-* --out "$pooled/B" >/dev/null
  gate=0
  line=$("$B" compare "$pooled/A" "$pooled/B" --policy "$policy" --max-mde "$target_mde" --quiet "${paired[@]}" \
           --markdown "$out/compare.md" --junit "$out/junit.xml" --html "$out/dashboard.html") || gate=$?
  [ "$gate" -ge 2 ] && { echo "ci/ab.sh: compare failed (exit $gate)" >&2; exit "$gate"; }
  verdict=${line%%:*}
  echo "round $round ($round launches a side, ${SECONDS}s): $line"
  case $verdict in GREEN | RED) break ;; esac
  if ((SECONDS >= budget_s)); then echo "ci/ab.sh: budget of ${budget_s}s spent"; break; fi
done
case $verdict in
  GREEN) echo "ci/ab.sh: confident: no change the gate could catch (>= ${target_mde} relative), after $rounds_run rounds" ;;
  RED) echo "ci/ab.sh: confident: RED after $rounds_run rounds (see $out/compare.md)" ;;
  *) echo "ci/ab.sh: not confident after $rounds_run rounds: $verdict (more rounds, or a quieter runner)" ;;
esac
exit "$gate"
