#!/usr/bin/env bash
# A peer environment named by what it holds (harness/peer_env.h): `peer.env: torch=2.10.0,peft=0.17.1`
# is <envs>/.venv-peer-torch-2.10.0_peft-0.17.1 with those releases and requirements.txt's pins
# for the rest (scripts/peer_env_requirements.py), installed from the wheelhouse only
# (pip --no-index --find-links .wheels): it builds the same with or without a registry, and
# scripts/fetch-wheels.sh fills the wheelhouse where one is reachable. `shardbench run` calls this
# on a scenario's first use of an environment. Loud: a wheel the wheelhouse lacks, or an install
# that ends with other versions than asked, is exit 3 naming the package and version, and leaves
# no environment behind. Prints the environment's Python.
#   scripts/peer-env.sh torch=2.10.0,peft=0.17.1 [DIR]
# Environment: SHARDBENCH_WHEELS (default .wheels), SHARDBENCH_PEER_ENVS (default the project).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
spec=${1:?usage: scripts/peer-env.sh PACKAGE=VERSION[,...] [DIR]}
python=${SHARDBENCH_BOOTSTRAP_PYTHON:-python3}
wheels=${SHARDBENCH_WHEELS:-$root/.wheels}
name=$("$python" "$root/scripts/peer_env_requirements.py" "$spec" --name) || exit 2
dir=${2:-${SHARDBENCH_PEER_ENVS:-$root}/.venv-peer-$name}
[ -f "$dir/shardbench-env.json" ] && { echo "$dir/bin/python"; exit 0; }
fail() { echo "peer-env: cannot build '$spec' ($dir): $1" >&2; rm -rf "$dir"; exit 3; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" "$root/scripts/peer_env_requirements.py" "$spec" > "$work/requirements.txt"
[ -d "$wheels" ] || fail "no wheelhouse $wheels (scripts/fetch-wheels.sh '$spec' fills it where a registry is reachable)"
rm -rf "$dir"
"$python" -m venv "$dir" >&2 || fail "python -m venv failed"
echo "peer-env: installing $(tr '\n' ' ' < "$work/requirements.txt")into $dir from $wheels" >&2
if ! "$dir/bin/pip" install --no-index --find-links "$wheels" --quiet --progress-bar off --no-compile \
    -r "$work/requirements.txt" > "$work/pip.log" 2>&1; then
  missing=$(grep -oE 'No matching distribution found for [^ ]+' "$work/pip.log" | head -1 | awk '{print $NF}')
  if [ -n "$missing" ]; then
    fail "no wheel for $missing in $wheels (scripts/fetch-wheels.sh '$spec' fetches it where a registry is reachable)"
  fi
  fail "pip install failed: $(grep -E 'ERROR' "$work/pip.log" | tail -1)"
fi
# What was installed, checked against what was asked, then the marker (written last: an
# environment without it is rebuilt).
"$dir/bin/python" - "$work/requirements.txt" "$dir/shardbench-env.json" "$spec" <<'PY' 2> "$work/check.txt" || fail "$(cat "$work/check.txt" 2>/dev/null)"
import importlib.metadata as md, json, os, sys
reqs, marker, spec = sys.argv[1:4]
asked = dict(line.strip().split("==") for line in open(reqs) if "==" in line)
got = {name: md.version(name) for name in asked}
wrong = [f"{n} {got[n]} (asked {v})" for n, v in asked.items() if got[n].split("+")[0] != v]
if wrong:
    sys.exit("installed " + ", ".join(wrong))
with open(marker + ".tmp", "w") as f:
    json.dump({"spec": spec, "versions": got}, f, indent=1)
os.replace(marker + ".tmp", marker)
PY
echo "$dir/bin/python"
