#!/usr/bin/env bash
# Downloads the Debian packages of scripts/gpu-debs.txt into .debs/ (git-ignored) for
# scripts/gpu-check.sh to unpack on a GPU machine that reaches no package registry. Carry .debs
# with the working tree (the device tool: carry [".debs"]).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mapfile -t packages < <(grep -v '^#' "$root/scripts/gpu-debs.txt" | grep -v '^$')
rm -rf "$root/.debs" && mkdir -p "$root/.debs"
cd "$root/.debs"
apt-get download "${packages[@]}" >/dev/null
echo "fetch-gpu-debs: $(ls | wc -l) packages, $(du -sh . | cut -f1) in .debs/"
