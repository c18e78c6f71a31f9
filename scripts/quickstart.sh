#!/usr/bin/env bash
# The first command on a fresh machine: installs everything (Debian packages, the pinned torch
# wheel in .venv), builds, and runs the smoke scenario on CPU (2 ranks over Gloo).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
./scripts/setup.sh
./scripts/build.sh
exec ./build/shardbench run smoke "$@"
