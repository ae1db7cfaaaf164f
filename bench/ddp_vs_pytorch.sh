#!/usr/bin/env bash
# DDP scaling on this machine: syncgrad's DistributedDataParallel and PyTorch's (bench/peer.sh: PyTorch 2.x
# from PyPI by default, over gloo) on the same models, batch 64 per rank, one thread per rank, world sizes 1 and 2,
# alternating the two frameworks; then syncgrad's bucket-size sweep and overlap off at world size 2.
# Usage: bench/ddp_vs_pytorch.sh [mlp_steps=300] [cnn_steps=40]   (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
mlp_steps=${1:-300}; cnn_steps=${2:-40}
. bench/peer.sh
build=${SYNCGRAD_BUILD_DIR:-build}
launch=$build/tools/syncgrad-launch
ours() {  # model world steps [extra flags]
  local model=$1 world=$2 steps=$3; shift 3
  $launch --nproc-per-node "$world" $build/bench/syncgrad-bench ddp --model "$model" --steps "$steps" "$@" |
    sed 's/^\[rank0\]: //'
}
theirs() {  # model world steps
  echo "torch $1 world $2: $(run_peer bench/torch_ddp.py "$1" "$3" "$2")"
}
for model in mlp cnn; do
  steps=$mlp_steps; [ "$model" = cnn ] && steps=$cnn_steps
  for world in 1 2; do
    ours "$model" "$world" "$steps"
    theirs "$model" "$world" "$steps"
  done
done
for model in mlp cnn; do
  steps=$mlp_steps; [ "$model" = cnn ] && steps=$cnn_steps
  for cap in 1 5 25 100; do ours "$model" 2 "$steps" --bucket-cap-mb "$cap"; done
  ours "$model" 2 "$steps" --no-overlap
done
