#!/usr/bin/env bash
# GPU check: builds syncgrad with its CUDA module into build-gpu/, runs the CUDA test suite and any GPU
# benchmarks, and prints a summary. Meant for a machine with an NVIDIA GPU (one H200, sm_90, is what it is
# sized for: the whole run stays under 8 minutes there). Exit status: 0 when the build succeeds, every CUDA
# test passes and the GPU test really ran; 77 when no GPU is visible and everything else passed; 1 otherwise
# (a SKIP of test_cuda on a machine where nvidia-smi shows a GPU counts as a failure).
#
#   scripts/gpu-check.sh              build + CUDA tests + GPU benchmarks
#   scripts/gpu-check.sh --all-tests  also run every other test suite in build-gpu
#   scripts/gpu-check.sh --prepare    (on a machine WITH network access) download the Debian packages the
#                                     build needs into .gpu-deps/, for a GPU machine that has no network
#
# Dependencies. If scripts/setup.sh exists it is run first (it installs the Debian packages), unless every
# build dependency is already present. GPU machines often have no network: there, packages carried in
# .gpu-deps/*.deb (made by --prepare; the folder is git-ignored through .git/info/exclude) are unpacked into
# a private prefix (nothing is installed into /), and the build finds them through CPATH, LIBRARY_PATH,
# PKG_CONFIG_PATH and CMAKE_PREFIX_PATH. With the device tool: run "scripts/gpu-check.sh" with carry
# [".gpu-deps"]. meson and ninja may come from pip (python3 -m mesonbuild.mesonmain is used if there is no
# meson command).
#
# GPU benchmarks: every GPU subcommand of build-gpu/bench/syncgrad-bench (GPU_BENCH_SUBCOMMANDS: `cuda`) is
# run with no further arguments (a GPU subcommand should default to a short GPU run), each under a time
# limit, in the time left of the 8-minute budget. syncgrad-bench not built is not an error. Before them,
# bench/gpu_models_vs_pytorch.sh times the bundled models' training steps beside PyTorch on the same GPU (with
# whatever python3 has torch with CUDA; SYNCGRAD_TORCH_PYTHON picks another) and its medians join the summary.
#
# Logs: build-gpu-check/ (and a copy in $GPU_CHECK_OUT, or in $OUT when that is set, e.g. by the
# device tool). Environment: GPU_CHECK_BUDGET_S (default 470), GPU_CHECK_JOBS (default nproc).
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
BUILD=build-gpu
LOGDIR=build-gpu-check  # beside build-gpu/, so wiping the build keeps the logs (git-ignored: /build*)
DEPS_DIR="$ROOT/.gpu-deps"
DEPS_PREFIX="${TMPDIR:-/tmp}/syncgrad-gpu-deps"
BUDGET_S="${GPU_CHECK_BUDGET_S:-470}"
JOBS="${GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 4)}"
# Build dependencies a GPU machine may lack (keep in step with scripts/setup.sh; header-only or -dev + runtime).
DEB_PACKAGES=(libeigen3-dev doctest-dev zlib1g-dev libcli11-dev nlohmann-json3-dev libfmt-dev libfmt9)
RUN_ALL_TESTS=0

log() { printf 'gpu-check: %s\n' "$*"; }
elapsed() { echo "$SECONDS"; }
left() { echo $((BUDGET_S - SECONDS)); }

# ---------------------------------------------------------------------------------------------- prepare
prepare() {
  mkdir -p "$DEPS_DIR"
  if [ -d "$ROOT/.git" ] && ! grep -qx '/.gpu-deps/' "$ROOT/.git/info/exclude" 2>/dev/null; then
    echo '/.gpu-deps/' >>"$ROOT/.git/info/exclude"
  fi
  (cd "$DEPS_DIR" && apt-get download "${DEB_PACKAGES[@]}") || { log "apt-get download failed"; exit 1; }
  chmod a+r "$DEPS_DIR"/*.deb 2>/dev/null
  log "downloaded into .gpu-deps/: $(cd "$DEPS_DIR" && ls ./*.deb | tr '\n' ' ')"
  log "on the GPU machine: scripts/gpu-check.sh (device tool: carry [\".gpu-deps\"])"
}

for arg in "$@"; do
  case "$arg" in
    --prepare) prepare; exit 0 ;;
    --all-tests) RUN_ALL_TESTS=1 ;;
    -h|--help) sed -n '2,28p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) log "unknown argument: $arg (see --help)"; exit 2 ;;
  esac
done

mkdir -p "$LOGDIR"
SUMMARY="$LOGDIR/summary.txt"
: >"$SUMMARY"
note() { log "$*"; printf '%s\n' "$*" >>"$SUMMARY"; }
FAILED=0
NO_GPU=0
fail() { note "FAIL: $*"; FAILED=1; }

finish() {
  local out="${GPU_CHECK_OUT:-${OUT:-}}"
  note "total time: $(elapsed)s"
  if [ "$FAILED" -ne 0 ]; then
    note "RESULT: FAIL"
  elif [ "$NO_GPU" -eq 1 ]; then
    note "RESULT: NO GPU (build and device-independent tests passed; the GPU tests were skipped)"
    FAILED=77
  else
    note "RESULT: PASS"
  fi
  if [ -n "$out" ] && mkdir -p "$out" 2>/dev/null; then
    cp "$SUMMARY" "$out/gpu-check-summary.txt" 2>/dev/null
    cp "$BUILD/meson-logs/testlog.json" "$out/gpu-check-testlog.json" 2>/dev/null
    for f in configure build; do
      [ -f "$LOGDIR/$f.log" ] && tail -c 200000 "$LOGDIR/$f.log" >"$out/gpu-check-$f.log"
    done
    [ -f "$LOGDIR/bench.log" ] && cp "$LOGDIR/bench.log" "$out/gpu-check-bench.log"
    [ -f "$LOGDIR/models-vs-pytorch.log" ] && cp "$LOGDIR/models-vs-pytorch.log" "$out/gpu-check-models-vs-pytorch.log"
  fi
  echo
  echo "==================== gpu-check summary ===================="
  cat "$SUMMARY"
  exit "$FAILED"
}

# ---------------------------------------------------------------------------------------------- the GPU
if command -v nvidia-smi >/dev/null 2>&1; then
  GPU_INFO="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 4)"
fi
GPU_INFO="${GPU_INFO:-}"
if [ -n "$GPU_INFO" ]; then note "GPU: $GPU_INFO"; else note "GPU: none visible (nvidia-smi absent or silent)"; fi
# The driver library (libcuda.so.1) must be loadable by the test processes.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu/nvidia; do
    [ -e "$d/libcuda.so.1" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
fi

# ---------------------------------------------------------------------------------------------- tools
if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/nvcc" ]; then export PATH="$d:$PATH"; break; fi
  done
fi
if command -v nvcc >/dev/null 2>&1; then
  export CUDACXX="${CUDACXX:-$(command -v nvcc)}"
  note "nvcc: $(command -v nvcc) ($(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
else
  fail "nvcc not found (PATH, /usr/local/cuda/bin)"
  finish
fi

# meson and ninja from pip (GPU images carry them in the Python environment, whose bin/ may not be on PATH).
if ! command -v meson >/dev/null 2>&1 || ! command -v ninja >/dev/null 2>&1; then
  for d in "$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null)" \
           "$(python3 -c 'import ninja; print(ninja.BIN_DIR)' 2>/dev/null)" "$HOME/.local/bin"; do
    if [ -n "$d" ] && { [ -x "$d/meson" ] || [ -x "$d/ninja" ]; }; then export PATH="$PATH:$d"; fi
  done
fi

# Unpacks carried .debs into a private prefix and points the compilers and meson's lookups at it.
use_carried_debs() {
  ls "$DEPS_DIR"/*.deb >/dev/null 2>&1 || return 1
  command -v dpkg-deb >/dev/null 2>&1 || { log "dpkg-deb missing: cannot unpack .gpu-deps"; return 1; }
  rm -rf "$DEPS_PREFIX" && mkdir -p "$DEPS_PREFIX"
  for deb in "$DEPS_DIR"/*.deb; do dpkg-deb -x "$deb" "$DEPS_PREFIX" || return 1; done
  local p="$DEPS_PREFIX/usr" multiarch=x86_64-linux-gnu
  # libz.so from zlib1g-dev points at Debian's exact libz.so.1.x: re-point it at this system's libz.so.1.
  local libz="$p/lib/$multiarch/libz.so" sysz
  sysz="$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')"
  if [ -L "$libz" ] && [ ! -e "$libz" ] && [ -n "$sysz" ]; then ln -sf "$sysz" "$libz"; fi
  # .pc files name prefix=/usr: rewrite to the private prefix.
  local pcdir
  for pcdir in "$p/share/pkgconfig" "$p/lib/$multiarch/pkgconfig"; do
    [ -d "$pcdir" ] && sed -i "s|^prefix=/usr|prefix=$p|" "$pcdir"/*.pc 2>/dev/null
  done
  export CPATH="$p/include:$p/include/eigen3${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$p/lib/$multiarch${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$p/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$p/share/pkgconfig:$p/lib/$multiarch/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export CMAKE_PREFIX_PATH="$p${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  note "dependencies: unpacked .gpu-deps/ into $DEPS_PREFIX ($(cd "$DEPS_DIR" && ls ./*.deb | sed 's|^\./||; s|_.*||' | tr '\n' ' '))"
  return 0
}

have_header() {  # have_header <path relative to an include dir>
  local d
  for d in /usr/include /usr/local/include ${CPATH:+${CPATH//:/ }}; do [ -e "$d/$1" ] && return 0; done
  return 1
}
deps_present() {
  have_header eigen3/Eigen/Core || have_header Eigen/Core || return 1
  have_header doctest/doctest.h || return 1
  have_header zlib.h || return 1
  { command -v meson >/dev/null 2>&1 || python3 -c 'import mesonbuild' >/dev/null 2>&1; } || return 1
  command -v ninja >/dev/null 2>&1 || return 1
  command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || return 1
}

if ! deps_present; then
  use_carried_debs || true
fi
if ! deps_present && [ -x scripts/setup.sh ]; then
  note "dependencies: running scripts/setup.sh (log: $LOGDIR/setup.log)"
  if ! timeout 150 scripts/setup.sh >"$LOGDIR/setup.log" 2>&1; then
    note "scripts/setup.sh failed or timed out (no network?); see $LOGDIR/setup.log"
  fi
fi
if ! deps_present; then
  fail "build dependencies missing (Eigen, doctest, zlib headers, meson, ninja, a C++ compiler); on a machine with network run scripts/gpu-check.sh --prepare and carry .gpu-deps"
  finish
fi

if command -v meson >/dev/null 2>&1; then MESON=(meson); else MESON=(python3 -m mesonbuild.mesonmain); fi
note "meson: $("${MESON[@]}" --version), ninja: $(ninja --version), c++: $(c++ --version 2>/dev/null | head -n 1)"

# ---------------------------------------------------------------------------------------------- configure
t0=$SECONDS
SETUP_ARGS=(-Dcuda=enabled -Dgloo=disabled --buildtype=release)
configure() {
  if [ -f "$BUILD/meson-private/coredata.dat" ]; then
    timeout 120 "${MESON[@]}" setup --reconfigure "$BUILD" "${SETUP_ARGS[@]}" && return 0
    log "reconfigure failed: wiping $BUILD"
    rm -rf "$BUILD"
  fi
  timeout 120 "${MESON[@]}" setup "$BUILD" "${SETUP_ARGS[@]}"
}
if ! configure >"$LOGDIR/configure.log" 2>&1; then
  tail -n 30 "$LOGDIR/configure.log"
  fail "meson setup (log: $LOGDIR/configure.log)"
  finish
fi
note "configure: ok ($((SECONDS - t0))s)"

# ---------------------------------------------------------------------------------------------- build
t0=$SECONDS
build_limit=$(( $(left) - 150 ))
[ "$build_limit" -lt 60 ] && build_limit=60
if ! timeout "$build_limit" ninja -C "$BUILD" -j "$JOBS" >"$LOGDIR/build.log" 2>&1; then
  grep -E -B2 -A12 'FAILED|error:' "$LOGDIR/build.log" | head -n 60
  fail "build (limit ${build_limit}s; log: $LOGDIR/build.log)"
  finish
fi
note "build: ok ($((SECONDS - t0))s, -j$JOBS)"
module="$(find "$BUILD/tensor/cuda" -name 'libsyncgrad_cuda.so' 2>/dev/null | head -n 1)"
if [ -z "$module" ]; then
  fail "the CUDA module libsyncgrad_cuda.so was not built (see $LOGDIR/configure.log)"
  finish
fi
if ldd "$BUILD/libsyncgrad.so" 2>/dev/null | grep -qE 'libcudart|libcublas'; then
  fail "libsyncgrad.so links CUDA libraries (it must only dlopen the module)"
fi
if ldd "$BUILD/bench/syncgrad-bench" 2>/dev/null | grep -qE 'libcudart|libcublas'; then
  fail "syncgrad-bench links CUDA libraries (only its cuda subcommand's module, bench/libsyncgrad_bench_cuda.so, may)"
fi
if command -v cuobjdump >/dev/null 2>&1; then
  note "module: $module, SASS for: $(cuobjdump --list-elf "$module" 2>/dev/null | sed -n 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/p' | sort -u | tr '\n' ' ')"
fi

# ---------------------------------------------------------------------------------------------- tests
t0=$SECONDS
test_limit=$(( $(left) - 60 ))
[ "$test_limit" -lt 60 ] && test_limit=60
SUITE_ARGS=(--suite cuda)
[ "$RUN_ALL_TESTS" -eq 1 ] && SUITE_ARGS=()
timeout "$test_limit" "${MESON[@]}" test -C "$BUILD" --no-rebuild "${SUITE_ARGS[@]}" --print-errorlogs \
  --num-processes "$JOBS" >"$LOGDIR/test.log" 2>&1
test_rc=$?
tail -n 40 "$LOGDIR/test.log"
[ "$test_rc" -eq 124 ] && fail "tests timed out after ${test_limit}s"
# Counts from meson's testlog.json (one JSON object per line).
counts="$(python3 - "$BUILD/meson-logs/testlog.json" <<'EOF'
import json, sys
passed = failed = skipped = 0
names = {}
reason = ""
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError:
    lines = []
for line in lines:
    if not line.strip():
        continue
    t = json.loads(line)
    r = t.get("result", "")
    name = t.get("name", "?").rsplit(" / ", 1)[-1]  # "syncgrad:cuda / cuda" (meson 1.0) or "cuda"
    names[name] = r
    if name == "cuda":
        out = (t.get("stdout") or "").strip()
        reason = out.splitlines()[-1] if out else "no reason printed"
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped += 1
    else:
        failed += 1
print(f"{passed} {failed} {skipped} {names.get('cuda', 'MISSING')}")
print(reason)
EOF
)"
read -r n_pass n_fail n_skip cuda_result <<<"$(head -n 1 <<<"${counts:-0 0 0 MISSING}")"
cuda_reason="$(sed -n 2p <<<"$counts")"
note "tests: $n_pass passed, $n_fail failed, $n_skip skipped ($((SECONDS - t0))s)"
if [ -f scripts/test_summary.py ]; then
  note "test cases: $(python3 scripts/test_summary.py "$BUILD/meson-logs/testlog.json" 2>/dev/null | tail -n 1)"
fi
[ "$n_fail" -gt 0 ] && fail "$n_fail test(s) failed (log: $LOGDIR/test.log)"
[ "$test_rc" -ne 0 ] && [ "$n_fail" -eq 0 ] && fail "meson test exited with $test_rc"
case "$cuda_result" in
  OK) note "test_cuda: ran on the GPU and passed" ;;
  SKIP)
    why="$cuda_reason"
    if [ -n "$GPU_INFO" ]; then
      fail "test_cuda skipped although a GPU is visible: $why"
    else
      note "test_cuda skipped: $why"
      NO_GPU=1
    fi ;;
  *) fail "test_cuda result: $cuda_result" ;;
esac
[ -n "$GPU_INFO" ] && ! python3 -c 'import json, sys; sys.exit(0 if any(t["name"].rsplit(" / ", 1)[-1] == "cuda_nccl" and t["result"] == "OK" for t in map(json.loads, filter(str.strip, open(sys.argv[1])))) else 1)' "$BUILD/meson-logs/testlog.json" && fail "test_cuda_nccl (NCCL process group, world size 1) did not run and pass on the GPU (log: $LOGDIR/test.log)"

# ---------------------------------------------------------------------------------------------- trainer
# syncgrad-train --device cuda end to end on the real Fashion-MNIST (when installed): a short run per model and
# precision (float32, then bf16 and fp16 autocast), whose summary line (samples/s, test accuracy, peak device
# memory) goes into the summary: the GPU half of the AMP benchmark (docs/BENCHMARKS.md).
if [ -n "$GPU_INFO" ] && [ -x "$BUILD/tools/syncgrad-train" ] &&
    ! ls /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte* >/dev/null 2>&1; then
  note "train on cuda: skipped (Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist)"
elif [ -n "$GPU_INFO" ] && [ -x "$BUILD/tools/syncgrad-train" ]; then
  for model in mlp cnn; do
    for amp in off bf16 fp16; do
      budget=$(( $(left) - 120 ))
      if [ "$budget" -lt 30 ]; then note "train $model --amp $amp on cuda: skipped (time budget used up)"; continue; fi
      [ "$budget" -gt 60 ] && budget=60
      log_file="$LOGDIR/train-$model-$amp.log"
      if timeout "$budget" "$BUILD/tools/syncgrad-train" --device cuda --model "$model" --amp "$amp" \
          --max-steps 600 --log-every 200 >"$log_file" 2>&1; then
        note "train $model --amp $amp on cuda: $(tail -n 1 "$log_file")"
      else
        fail "syncgrad-train --device cuda --model $model --amp $amp (log: $log_file)"
      fi
    done
  done
fi

# ---------------------------------------------------------------------------------------------- models vs PyTorch
# bench/gpu_models_vs_pytorch.sh: training step throughput of the CNN, ResNet-20/18 and the GPT beside PyTorch
# on this GPU (A B pairs; it skips, exit 0, when no Python here has torch with CUDA). It gets at most 160 s,
# leaving 75 s of the budget to the benchmarks below, and stops starting pairs 15 s before its limit; its
# medians go into the summary.
if [ -n "$GPU_INFO" ] && [ -x "$BUILD/tools/syncgrad-train" ]; then
  limit=$(( $(left) - 75 ))
  [ "$limit" -gt 160 ] && limit=160
  log_file="$LOGDIR/models-vs-pytorch.log"
  if [ "$limit" -lt 45 ]; then
    note "models vs PyTorch on cuda: skipped (time budget used up)"
  else
    t0=$SECONDS
    SYNCGRAD_BUILD="$BUILD" timeout "$limit" bench/gpu_models_vs_pytorch.sh --budget $((limit - 15)) >"$log_file" 2>&1
    rc=$?
    cat "$log_file"
    if grep -q '^skipped:' "$log_file"; then
      note "models vs PyTorch on cuda: $(grep -m1 '^skipped:' "$log_file")"
    elif grep -q '^medians' "$log_file"; then
      note "models vs PyTorch on cuda ($((SECONDS - t0))s; log: $log_file):"
      sed -n '1p; /^medians/,$p' "$log_file" >>"$SUMMARY"
    fi
    case "$rc" in
      0) ;;
      124) fail "bench/gpu_models_vs_pytorch.sh timed out after ${limit}s (log: $log_file)" ;;
      *) fail "bench/gpu_models_vs_pytorch.sh: exit $rc (log: $log_file)" ;;
    esac
  fi
fi

# ---------------------------------------------------------------------------------------------- benchmarks
GPU_BENCH_SUBCOMMANDS=(cuda)  # the subcommands of syncgrad-bench that measure the GPU
bench_exe="$BUILD/bench/syncgrad-bench"
if [ ! -x "$bench_exe" ]; then
  note "benchmarks: $bench_exe not built: skipped"
else
  : >"$LOGDIR/bench.log"
  for sub in "${GPU_BENCH_SUBCOMMANDS[@]}"; do
    budget=$(( $(left) - 10 ))
    if [ "$budget" -lt 20 ]; then note "bench syncgrad-bench $sub: skipped (time budget used up)"; continue; fi
    [ "$budget" -gt 180 ] && budget=180
    t0=$SECONDS
    echo "===== $bench_exe $sub" >>"$LOGDIR/bench.log"
    timeout "$budget" "$bench_exe" "$sub" >>"$LOGDIR/bench.log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
      note "bench syncgrad-bench $sub: ok ($((SECONDS - t0))s)"
    elif [ "$rc" -eq 124 ]; then
      fail "bench syncgrad-bench $sub: timed out after ${budget}s"
    else
      fail "bench syncgrad-bench $sub: exit $rc"
    fi
    tail -n 15 "$LOGDIR/bench.log"
  done
fi

finish
