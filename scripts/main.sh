#!/usr/bin/env bash
# The main job on a fresh machine: install, build, then run the default training demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/tools/syncgrad-demo "$@"
