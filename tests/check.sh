# shellcheck shell=bash
# Shared by the shell tests (sourced): check "description" command... runs the command, prints "ok: ..." or
# "FAILED: ..." and counts the failures in $failures; finish exits with their verdict. require_fashion_mnist skips
# the test (exit 77) when the training data is not there.
failures=0
check() {  # check "description" command...
  local what="$1"; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}
finish() {
  echo "$failures failure(s)"
  if [ "$failures" -eq 0 ]; then exit 0; else exit 1; fi
}
require_fashion_mnist() {
  if ! ls /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte* >/dev/null 2>&1 && [ -z "${SYNCGRAD_DATA_DIR:-}" ]; then
    echo "skipped: Fashion-MNIST is not installed (Debian's dataset-fashion-mnist, or set SYNCGRAD_DATA_DIR)"; exit 77
  fi
}
