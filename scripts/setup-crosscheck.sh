#!/usr/bin/env bash
# Optional Python cross-check tools for the tests (never needed by the product): Debian's PyTorch and NumPy
# plus PyPI's safetensors in a virtual environment at build/crosscheck-venv that sees Debian's packages.
# Failure is not fatal: the tests that need these tools then skip visibly.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=build/crosscheck-venv
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, safetensors, numpy" 2>/dev/null; then
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
missing=()
for p in python3-torch python3-numpy python3-venv; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-crosscheck: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    { echo "setup-crosscheck: could not install ${missing[*]}; PyTorch cross-checks will be skipped"; exit 0; }
fi
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv" &&
  "$venv/bin/pip" install --quiet safetensors ||
  { echo "setup-crosscheck: could not install safetensors from PyPI; PyTorch cross-checks will be skipped"; exit 0; }
