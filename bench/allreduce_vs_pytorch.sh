#!/usr/bin/env bash
# Allreduce between 2 local ranks: syncgrad's Gloo process group and raw Gloo (one program), then PyTorch's
# all_reduce over gloo (bench/peer.sh: PyTorch 2.x from PyPI by default), alternated `pairs` times in one run.
# Usage: bench/allreduce_vs_pytorch.sh [pairs=2] [rounds=3]   (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-2}; rounds=${2:-3}
build=${SYNCGRAD_BUILD_DIR:-build}
. bench/peer.sh
for pair in $(seq 1 "$pairs"); do
  echo "== pair $pair: syncgrad"
  $build/tools/syncgrad-launch --nproc-per-node 2 $build/bench/syncgrad-bench allreduce --rounds "$rounds" |
    sed 's/^\[rank0\]: //'
  echo "== pair $pair: PyTorch"
  run_peer bench/torch_allreduce.py "$rounds" 2
done
