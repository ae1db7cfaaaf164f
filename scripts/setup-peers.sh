#!/usr/bin/env bash
# The benchmark peer: PyTorch 2.x from PyPI (MKL and oneDNN inside the wheel; it runs on the CPU, the CUDA
# libraries it pulls in stay unused) in build/peer-venv, for bench/*_vs_pytorch.sh only -- never needed by the
# product or the tests. About 4 GB with its CUDA wheels; a few minutes. Prints the version it set up.
# Usage: scripts/setup-peers.sh [pip requirement, default "torch>=2"]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/peer-venv
requirement=${1:-torch>=2}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, numpy" 2>/dev/null; then
  "$venv/bin/python" bench/peer_info.py
  exit 0
fi
python=$(command -v python3)
if ! "$python" -c "import venv, ensurepip" 2>/dev/null; then
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends python3-venv >/dev/null
  python=/usr/bin/python3
fi
rm -rf "$venv"
mkdir -p build
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet "$requirement" numpy
"$venv/bin/python" bench/peer_info.py
