#!/usr/bin/env bash
# Installs the Debian packages syncgrad needs (only those missing), then configures and builds into ./build.
# Usage: scripts/setup.sh [extra meson options...]   (e.g. -Dportable=true, -Dcuda=disabled)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build pkg-config cmake g++ libeigen3-dev doctest-dev libgloo-dev libdnnl-dev zlib1g-dev
          libcli11-dev nlohmann-json3-dev libfmt-dev dataset-fashion-mnist fortunes python3)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  if ! "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
    "${sudo_cmd[@]}" apt-get update
    "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
  fi
fi

# nvcc lives outside PATH on these machines; meson finds it through PATH.
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi

if [ ! -f build/build.ninja ]; then
  meson setup build "$@"
elif [ $# -gt 0 ]; then
  meson configure build "$@"
fi
# The build's output is kept in build/ninja-output.log; with SYNCGRAD_FAIL_ON_WARNINGS=1 (set by .ci/run) a
# compiler warning fails the set-up, naming it (ccache replays the warnings of cached objects too).
warning='warning( #[0-9]+-D)? ?:'  # g++ "warning:", nvcc "warning #177-D:" and "nvcc warning :"
ninja -C build 2>&1 | tee build/ninja-output.log
if [ "${SYNCGRAD_FAIL_ON_WARNINGS:-0}" = 1 ] && grep -qE "$warning" build/ninja-output.log; then
  echo "setup: the build printed compiler warnings (SYNCGRAD_FAIL_ON_WARNINGS=1); fix them:"
  grep -E "$warning" build/ninja-output.log | sort -u
  exit 1
fi
