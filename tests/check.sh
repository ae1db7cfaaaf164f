# shellcheck shell=bash
# Shared by the shell tests (sourced): check "description" command... runs the command, prints "ok: ..." or
# "FAILED: ..." and counts the failures in $failures; finish exits with their verdict.
failures=0
check() {  # check "description" command...
  local what="$1"; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}
finish() {
  echo "$failures failure(s)"
  if [ "$failures" -eq 0 ]; then exit 0; else exit 1; fi
}
