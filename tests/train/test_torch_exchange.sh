#!/usr/bin/env bash
# Checkpoint exchange with PyTorch (tests/train/torch_exchange.py). Skips (exit 77, with the reason) when the
# cross-check tools of scripts/setup-crosscheck.sh or the Fashion-MNIST data are not available.
# Usage: test_torch_exchange.sh SYNCGRAD_TRAIN BUILD_DIR
set -u
binary="$1"; build="$2"
python="$build/crosscheck-venv/bin/python"
data="${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}"
if ! [ -x "$python" ] || ! "$python" -c "import torch, safetensors, numpy" 2>/dev/null; then
  echo "skipped: PyTorch/safetensors cross-check tools not installed (scripts/setup-crosscheck.sh)"; exit 77
fi
if ! ls "$data"/t10k-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "skipped: Fashion-MNIST not found in $data"; exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" "$(dirname "$0")/torch_exchange.py" "$binary" "$data" "$work"
