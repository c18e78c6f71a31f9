#!/usr/bin/env bash
# Installs everything shardbench needs on a Debian machine: the Debian packages listed in
# scripts/apt-packages.txt and, in the project-local virtual environment .venv, the torch
# wheel pinned in requirements.txt (its LibTorch is what we link), and engine torchtune's
# .venv-peer-torchtune (scripts/setup-torchtune-env.sh). Idempotent: a second run
# only checks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mapfile -t packages < <(grep -vE '^\s*(#|$)' scripts/apt-packages.txt)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

python=${SHARDBENCH_BOOTSTRAP_PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$python" -m venv .venv
fi
if ! .venv/bin/python - <<'PY' 2>/dev/null
import sys, importlib.metadata as md
want = {}
for line in open("requirements.txt"):
    line = line.split("#")[0].strip()
    if "==" in line:
        name, ver = line.split("==")
        want[name.strip()] = ver.strip()
ok = all(md.version(n).split("+")[0] == v for n, v in want.items())
sys.exit(0 if ok else 1)
PY
then
  echo "setup: installing Python requirements into .venv (torch wheel, ~4 GiB with CUDA libraries)"
  # --no-compile: byte-compiling torch's ~20,000 modules at install took ~50 s of ~165 here;
  # Python compiles what it imports on first import instead.
  .venv/bin/pip install --quiet --progress-bar off --no-compile -r requirements.txt
fi
# engine: torchtune's own environment (torchtune 0.6.1 beside .venv's packages; ~1 min the first time).
scripts/setup-torchtune-env.sh > /dev/null
echo "setup: ok (torch $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("torch"))'))"
