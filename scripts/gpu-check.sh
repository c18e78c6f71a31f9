#!/usr/bin/env bash
# The GPU check, for a machine with a GPU that reaches no package registry (the H100/H200 the
# device tool lends; its image has the compiler, CMake, Ninja, CUDA and torch):
#   1. unpacks the Debian packages carried in .debs/ (scripts/fetch-gpu-debs.sh, run beforehand
#      where apt works) into a private prefix;
#   2. builds shardbench against that machine's torch (SHARDBENCH_PYTHON, else
#      /opt/torch/.venv/bin/python, else python3) into build-gpu/;
#   3. runs the GPU unit tests (kernel trace, matmul peak, NCCL collectives), then suites/gpu.yaml
#      with peer.python set to that same Python (PyTorch's FSDP1 and FSDP2 run from the
#      machine's torch, transformers and peft, like for like with ours: scenarios/gpu_engines.yaml);
#   4. writes everything to OUT_DIR: build and test logs, the run's results and dashboard.html,
#      and summary.md (scripts/run_summary.py: per instance tokens/s, model TFLOP/s, MFU,
#      allocator peaks, overlap, init time, the provenance; then ours beside PyTorch's FSDP with
#      what matched and what did not), with each phase's seconds in summary.log.
# Budget: 8 minutes of a 15-minute device window (a warning in summary.log past it).
#
#   scripts/gpu-check.sh OUT_DIR [--build-only | --dry-run]
# --dry-run (any machine, no GPU or torch needed): prints every command the check would run.
# With the device tool: carry [".debs"], command `scripts/gpu-check.sh $OUT/check`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/gpu-check.sh OUT_DIR [--build-only | --dry-run]}
mode=${2:-}
case "$mode" in "" | --build-only | --dry-run) ;; *) echo "gpu-check: unknown option '$mode'" >&2; exit 2 ;; esac
dry=false
[ "$mode" = "--dry-run" ] && dry=true
budget_s=480
if $dry; then
  log() { echo "gpu-check: $*"; }
else
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  log() { echo "gpu-check: $*" | tee -a "$out/summary.log"; }
fi
started=$(date +%s)
phase_started=$started
# One step of the check: printed (dry run) or run with its output into OUT_DIR/<log>.
step() {
  local logfile=$1
  shift
  if $dry; then
    echo "+ $* > $out/$logfile"
    return 0
  fi
  "$@" >"$out/$logfile" 2>&1
}
phase_done() {
  $dry && return 0
  local now
  now=$(date +%s)
  log "$1: $((now - phase_started)) s"
  phase_started=$now
}

python=${SHARDBENCH_PYTHON:-}
if [ -z "$python" ]; then
  for candidate in /opt/torch/.venv/bin/python python3; do
    if "$candidate" -c 'import torch' 2>/dev/null; then python=$(command -v "$candidate"); break; fi
  done
fi
if [ -z "$python" ]; then
  $dry || { log "no Python with torch found (set SHARDBENCH_PYTHON)"; exit 2; }
  python=/opt/torch/.venv/bin/python  # what the device's image has
fi
$dry || log "torch $("$python" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)') from $python"

# 1. The carried packages, in a prefix of their own (unpacking into / can break the image).
configure=(-DSHARDBENCH_PYTHON="$python" -DSHARDBENCH_CUDA=ON -DSHARDBENCH_BUILD_BENCHMARKS=OFF
           "-DCMAKE_CUDA_ARCHITECTURES=90")
if compgen -G "$root/.debs/*.deb" >/dev/null; then
  deps=${SHARDBENCH_DEPS:-/tmp/shardbench-deps}
  if $dry; then
    echo "+ dpkg -x <each of .debs/*.deb> $deps"
  else
    rm -rf "$deps" && mkdir -p "$deps"
    for f in "$root"/.debs/*.deb; do dpkg -x "$f" "$deps"; done
    # Debian's Gloo targets name /usr/lib absolutely; its libz.so points into /lib.
    sed -i "s|\"/usr/lib/|\"$deps/usr/lib/|g" "$deps"/usr/share/cmake/Gloo/GlooTargets-*.cmake
    for z in /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/lib64/libz.so.1; do
      if [ -e "$z" ]; then ln -sf "$z" "$deps/usr/lib/x86_64-linux-gnu/libz.so"; break; fi
    done
  fi
  export LD_LIBRARY_PATH="$deps/usr/lib:$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  configure+=(-DCMAKE_PREFIX_PATH="$deps/usr;$deps/usr/lib/x86_64-linux-gnu/cmake"
              -DSHARDBENCH_CHARTJS="$deps/usr/share/javascript/chart.js/chart.min.js")
  log "unpacked $(ls "$root"/.debs/*.deb | wc -l) carried packages into $deps"
else
  log "no .debs/ carried: using the system's packages"
fi

# 2. Build.
export SHARDBENCH_BUILD_DIR="$root/build-gpu"
bin=$SHARDBENCH_BUILD_DIR
if ! step build.log "$root/scripts/build.sh" "${configure[@]}"; then
  tail -40 "$out/build.log"; log "build FAILED (build.log)"; exit 3
fi
phase_done "build"
[ "$mode" = "--build-only" ] && { log "--build-only: done"; exit 0; }
if ! $dry; then
  "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || { log "no GPU visible to torch"; exit 3; }
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$out/summary.log" 2>&1 || true
fi

# 3. GPU unit tests, then the GPU suite (ours, the baseline, PyTorch's FSDP1/FSDP2 like for like).
status=0
step tests.log "$bin/tests/shardbench_tests" --gtest_filter='KernelTrace.*:MatmulPeak.*:NcclCommunicator.*:GpuFacts.*:DeviceInit.*:HostSync.*' ||
  { status=1; log "GPU unit tests FAILED (tests.log)"; }
$dry || log "$(grep -E '^\[  (PASSED|FAILED) ' "$out/tests.log" | tr '\n' ' ')"
phase_done "GPU unit tests"
step run.log "$bin/shardbench" run "$root/suites/gpu.yaml" --out "$out/run" "peer.python=$python" || status=1
phase_done "suites/gpu.yaml"
step summary.md "$python" "$root/scripts/run_summary.py" "$out/run" || status=1
# Ours beside PyTorch's FSDP (flat / torch_fsdp1, per_param / torch_fsdp2): ratios, exact
# memory and communication, and whether the pair ran like for like.
step engines.log "$bin/shardbench" compare "$out/run" --engines --markdown "$out/engines.md" || status=1
if $dry; then
  echo "+ cat $out/engines.md >> $out/summary.md; cp $out/run/dashboard.html $out/"
  exit 0
fi
cat "$out/engines.md" >>"$out/summary.md" 2>/dev/null || true
cp "$out/run/dashboard.html" "$out/dashboard.html" 2>/dev/null || true
total=$(( $(date +%s) - started ))
log "done in $total s, status $status"
[ "$total" -le "$budget_s" ] || log "WARNING: over the ${budget_s} s budget (a 15-minute device window needs room to rerun)"
cat "$out/summary.md"
exit $status
