#!/usr/bin/env bash
# Installs (plus the optional Python cross-check tools and schedulers), builds and runs every test; ends with the line
# "N passed, N failed, N skipped" (test cases, counted from meson's testlog.json); non-zero exit on failure.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || { echo "0 passed, 1 failed, 0 skipped"; exit 1; }
scripts/setup-crosscheck.sh  # optional PyTorch/safetensors tools; tests skip visibly without them
scripts/setup-schedulers.sh  # optional Slurm, MUNGE and Open MPI for tests/sched; skipped visibly without them
meson test -C build --print-errorlogs --num-processes "$(nproc)"
status=$?
python3 scripts/test_summary.py build/meson-logs/testlog.json
summary=$?
[ $status -eq 0 ] && [ $summary -eq 0 ]
