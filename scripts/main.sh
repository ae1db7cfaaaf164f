#!/usr/bin/env bash
# The main job on a fresh machine: install, build, then train the CNN for one epoch on the bundled
# Fashion-MNIST (Debian's dataset-fashion-mnist) and print the test accuracy. Extra arguments go to
# syncgrad-train (see build/tools/syncgrad-train --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/tools/syncgrad-train "$@"
