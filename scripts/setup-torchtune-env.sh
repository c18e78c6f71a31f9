#!/usr/bin/env bash
# engine: torchtune's Python, .venv-peer-torchtune (scripts/setup-peer-env.sh torchtune runs this;
# scripts/setup.sh too). torchtune 0.6.1 and the torchao, datasets and torchdata it imports
# (requirements-torchtune.txt) installed beside the project's .venv, whose site-packages this
# environment reads through a .pth file: the same torch, transformers and peft as every other peer
# (no second 4 GiB torch), and pip held to .venv's versions of the packages the peer computes with
# (requirements.txt's and transformers' own), so none is shadowed here. Others may be: datasets
# 3.6.0 takes an older fsspec than torch's. Idempotent. Prints the environment's Python.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
env_dir="$root/.venv-peer-torchtune"
python=${SHARDBENCH_BOOTSTRAP_PYTHON:-python3}
project="$root/.venv/bin/python"
[ -x "$project" ] || { echo "setup-torchtune-env: $project missing: run scripts/setup.sh first" >&2; exit 3; }
[ -x "$env_dir/bin/python" ] || "$python" -m venv "$env_dir" >&2
site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
site "$project" > "$(site "$env_dir/bin/python")/shardbench-project-venv.pth"
pins=$(grep -vE '^\s*(#|$)' "$root/requirements-torchtune.txt" | tr -d ' ')
if ! "$env_dir/bin/python" - $pins <<'PY' 2>/dev/null
import sys, importlib.metadata as md
sys.exit(0 if all(md.version(n).split("+")[0] == v for n, v in (a.split("==") for a in sys.argv[1:])) else 1)
PY
then
  echo "setup-torchtune-env: installing requirements-torchtune.txt into $env_dir" >&2
  constraints=$(mktemp)
  trap 'rm -f "$constraints"' EXIT
  "$project" -m pip freeze --exclude-editable |
    grep -iE '^(torch|transformers|peft|accelerate|huggingface[-_]hub|tokenizers|safetensors|numpy)==' > "$constraints"
  "$env_dir/bin/pip" install --quiet --progress-bar off --no-compile -c "$constraints" \
    -r "$root/requirements-torchtune.txt" >&2
fi
echo "$env_dir/bin/python"
