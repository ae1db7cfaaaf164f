#!/usr/bin/env bash
# syncgrad's ResNets against PyTorch (tests/train/resnet_torch_check.py): same logits, loss, gradients and
# running statistics for the same weights, and checkpoints that load in both directions. Skips (exit 77, with
# the reason) when the cross-check tools of scripts/setup-crosscheck.sh are not installed.
# Usage: test_resnet_torch.sh RESNET_FORWARD SYNCGRAD_TRAIN BUILD_DIR
set -u
helper="$1"; train="$2"; build="$3"
python="$build/crosscheck-venv/bin/python"
if ! [ -x "$python" ] || ! "$python" -c "import torch, safetensors" 2>/dev/null; then
  echo "skipped: PyTorch/safetensors cross-check tools not installed (scripts/setup-crosscheck.sh)"; exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
OMP_NUM_THREADS=1 "$python" "$(dirname "$0")/resnet_torch_check.py" "$helper" "$train" "$work"
