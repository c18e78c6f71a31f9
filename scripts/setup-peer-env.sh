#!/usr/bin/env bash
# A Python environment for the PyTorch peer (peers/torch_fsdp) with another torch release, for a
# version matrix: `.venv-peer-torch-<VERSION>/` holding torch==VERSION from PyPI (its default
# CUDA build, which also runs on CPU; a few GiB with its CUDA libraries) with the transformers,
# peft and accelerate pinned in requirements.txt. Prints the environment's Python. A scenario names it
# `peer.python: torch-<VERSION>` (or by that path):
#   scripts/setup-peer-env.sh 2.10.0
#   build/shardbench run peers_tiny engine=torch_fsdp2 peer.python=torch-2.10.0
#
# `scripts/setup-peer-env.sh torchtune` makes .venv-peer-torchtune instead (engine: torchtune reads
# it without peer.python): requirements-torchtune.txt beside the project's own .venv packages.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${1:?usage: scripts/setup-peer-env.sh TORCH_VERSION | torchtune}
python=${SHARDBENCH_BOOTSTRAP_PYTHON:-python3}
if [ "$version" = torchtune ]; then
  exec "$root/scripts/setup-torchtune-env.sh"
fi
[[ "$version" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || { echo "setup-peer-env: '$version' is not a torch version like 2.10.0" >&2; exit 2; }
env_dir="$root/.venv-peer-torch-$version"
pin() { grep -E "^$1==" "$root/requirements.txt" | cut -d'#' -f1 | tr -d ' '; }
if [ ! -x "$env_dir/bin/python" ]; then
  "$python" -m venv "$env_dir" >&2
fi
if ! "$env_dir/bin/python" -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$version' else 1)" 2>/dev/null; then
  echo "setup-peer-env: installing torch==$version into $env_dir" >&2
  "$env_dir/bin/pip" install --quiet --progress-bar off "torch==$version" "$(pin transformers)" "$(pin peft)" "$(pin accelerate)" pyyaml >&2
fi
echo "$env_dir/bin/python"
