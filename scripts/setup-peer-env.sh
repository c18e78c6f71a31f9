#!/usr/bin/env bash
# A peer environment with another torch release (or torchtune's), by name, fetching what it
# needs first: `scripts/setup-peer-env.sh 2.10.0` = scripts/fetch-wheels.sh torch=2.10.0 (where a
# registry is reachable) then scripts/peer-env.sh torch=2.10.0, which makes
# .venv-peer-torch-2.10.0 from the wheelhouse alone. A scenario names it `peer.env: torch=2.10.0`
# (or the older `peer.python: torch-2.10.0`, the same directory). Prints the environment's Python.
#   scripts/setup-peer-env.sh 2.10.0
#   build/shardbench run peers_tiny engine=torch_fsdp2 peer.env=torch=2.10.0
# `scripts/setup-peer-env.sh torchtune` makes .venv-peer-torchtune (scripts/setup-torchtune-env.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${1:?usage: scripts/setup-peer-env.sh TORCH_VERSION | torchtune}
if [ "$version" = torchtune ]; then
  exec "$root/scripts/setup-torchtune-env.sh"
fi
[[ "$version" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || { echo "setup-peer-env: '$version' is not a torch version like 2.10.0" >&2; exit 2; }
"$root/scripts/fetch-wheels.sh" "torch=$version"
exec "$root/scripts/peer-env.sh" "torch=$version"
