#!/usr/bin/env bash
# The GPU check, for a machine with a GPU that reaches no package registry (the H200 the device
# tool lends; its image has the compiler, CMake, Ninja, CUDA and torch):
#   1. unpacks the Debian packages carried in .debs/ (scripts/fetch-gpu-debs.sh, run beforehand
#      where apt works) into a private prefix;
#   2. builds shardbench against that machine's torch (SHARDBENCH_PYTHON, else
#      /opt/torch/.venv/bin/python, else python3) into build-gpu/;
#   3. runs the GPU unit tests (kernel trace, matmul peak, NCCL collectives), then suites/gpu.yaml
#      (fits in 8 minutes on an H200);
#   4. writes everything to OUT_DIR: build and test logs, the run's results and dashboard.html,
#      and summary.md (scripts/run_summary.py, then our engines beside PyTorch's fully_shard).
#
#   scripts/gpu-check.sh OUT_DIR [--build-only]
# With the device tool: carry [".debs"], command `scripts/gpu-check.sh $OUT/check`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/gpu-check.sh OUT_DIR [--build-only]}
build_only=${2:-}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log() { echo "gpu-check: $*" | tee -a "$out/summary.log"; }
started=$(date +%s)

python=${SHARDBENCH_PYTHON:-}
if [ -z "$python" ]; then
  for candidate in /opt/torch/.venv/bin/python python3; do
    if "$candidate" -c 'import torch' 2>/dev/null; then python=$(command -v "$candidate"); break; fi
  done
fi
[ -n "$python" ] || { log "no Python with torch found (set SHARDBENCH_PYTHON)"; exit 2; }
log "torch $("$python" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)') from $python"

# 1. The carried packages, in a prefix of their own (unpacking into / can break the image).
configure=(-DSHARDBENCH_PYTHON="$python" -DSHARDBENCH_CUDA=ON -DSHARDBENCH_BUILD_BENCHMARKS=OFF -DCMAKE_CUDA_ARCHITECTURES=90)
if compgen -G "$root/.debs/*.deb" >/dev/null; then
  deps=${SHARDBENCH_DEPS:-/tmp/shardbench-deps}
  rm -rf "$deps" && mkdir -p "$deps"
  for f in "$root"/.debs/*.deb; do dpkg -x "$f" "$deps"; done
  # Debian's Gloo targets name /usr/lib absolutely; its libz.so points into /lib.
  sed -i "s|\"/usr/lib/|\"$deps/usr/lib/|g" "$deps"/usr/share/cmake/Gloo/GlooTargets-*.cmake
  for z in /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/lib64/libz.so.1; do
    if [ -e "$z" ]; then ln -sf "$z" "$deps/usr/lib/x86_64-linux-gnu/libz.so"; break; fi
  done
  export LD_LIBRARY_PATH="$deps/usr/lib:$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  configure+=(-DCMAKE_PREFIX_PATH="$deps/usr;$deps/usr/lib/x86_64-linux-gnu/cmake"
              -DSHARDBENCH_CHARTJS="$deps/usr/share/javascript/chart.js/chart.min.js")
  log "unpacked $(ls "$root"/.debs/*.deb | wc -l) carried packages into $deps"
else
  log "no .debs/ carried: using the system's packages"
fi

# 2. Build.
export SHARDBENCH_BUILD_DIR="$root/build-gpu"
if ! "$root/scripts/build.sh" "${configure[@]}" >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"; log "build FAILED (build.log)"; exit 3
fi
log "built in $(( $(date +%s) - started )) s"
[ "$build_only" = "--build-only" ] && { log "--build-only: done"; exit 0; }
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || { log "no GPU visible to torch"; exit 3; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$out/summary.log" 2>&1 || true

# 3. GPU unit tests, then the GPU suite.
status=0
"$SHARDBENCH_BUILD_DIR/tests/shardbench_tests" --gtest_filter='KernelTrace.*:MatmulPeak.*:NcclCommunicator.*' \
  >"$out/tests.log" 2>&1 || { status=1; log "GPU unit tests FAILED (tests.log)"; }
log "$(grep -E '^\[  (PASSED|FAILED) ' "$out/tests.log" | tr '\n' ' ')"
"$SHARDBENCH_BUILD_DIR/shardbench" run "$root/suites/gpu.yaml" --out "$out/run" >"$out/run.log" 2>&1 || status=1
"$python" "$root/scripts/run_summary.py" "$out/run" >"$out/summary.md" || status=1
# Ours beside the machine's own fully_shard (gpu_1b per_param vs gpu_1b_torch, LoRA, bf16).
"$SHARDBENCH_BUILD_DIR/shardbench" compare "$out/run" --engines --markdown "$out/engines.md" >"$out/engines.log" 2>&1 &&
  cat "$out/engines.md" >>"$out/summary.md"
cp "$out/run/dashboard.html" "$out/dashboard.html" 2>/dev/null || true
log "done in $(( $(date +%s) - started )) s, status $status"
cat "$out/summary.md"
exit $status
