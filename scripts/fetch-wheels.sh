#!/usr/bin/env bash
# The wheelhouse for peer environments (scripts/peer-env.sh installs from it only): every wheel
# each SPEC's environment needs, dependencies included, downloaded into .wheels/ (git-ignored)
# where a package registry is reachable. Carry .wheels/ to a machine without one (a GPU box,
# an air-gapped runner) and the same environments build there with pip --no-index. Torch's
# PyPI wheels are CUDA builds: ~0.9 GiB each plus ~3 GiB of NVIDIA libraries per CUDA release.
# Exit 3 naming the package when a release cannot be fetched.
#   scripts/fetch-wheels.sh torch=2.10.0 torch=2.9.1,peft=0.17.1 ...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: scripts/fetch-wheels.sh PACKAGE=VERSION[,...] ..." >&2; exit 2; }
python=${SHARDBENCH_BOOTSTRAP_PYTHON:-python3}
wheels=${SHARDBENCH_WHEELS:-$root/.wheels}
mkdir -p "$wheels"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The project's pip (a bootstrap python3 may have none); the wheels are for this Python's version.
pip=("$root/.venv/bin/python" -m pip)
[ -x "$root/.venv/bin/python" ] || pip=("$python" -m pip)
for spec in "$@"; do
  "$python" "$root/scripts/peer_env_requirements.py" "$spec" > "$work/requirements.txt" || exit 2
  echo "fetch-wheels: $(tr '\n' ' ' < "$work/requirements.txt")-> $wheels" >&2
  if ! "${pip[@]}" download --quiet --progress-bar off -d "$wheels" -r "$work/requirements.txt" > "$work/pip.log" 2>&1; then
    missing=$(grep -oE 'No matching distribution found for [^ ]+' "$work/pip.log" | head -1 | awk '{print $NF}')
    echo "fetch-wheels: cannot fetch '$spec': ${missing:+no release $missing on the registry; }$(grep -E 'ERROR' "$work/pip.log" | tail -1)" >&2
    exit 3
  fi
done
echo "fetch-wheels: $(ls "$wheels" | wc -l) wheels in $wheels ($(du -sh "$wheels" | cut -f1))" >&2
