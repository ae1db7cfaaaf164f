# shellcheck shell=bash
# Shared by tests/launch/test_*.sh, beside tests/check.sh (check, finish):
# wait_for() polls a condition for a few seconds, gone() tells whether a process has ended, lacks() that a
# file does not contain a text.
. "$(dirname "${BASH_SOURCE[0]}")/../check.sh"
wait_for() {  # wait_for seconds command...: true once command succeeds, false after the time is up
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    if [ $SECONDS -ge $deadline ]; then return 1; fi
    sleep 0.05
  done
}
elapsed_ms() {  # elapsed_ms start_ns: milliseconds since start_ns (from date +%s%N)
  echo $((($(date +%s%N) - $1) / 1000000))
}
gone() {  # gone pidfile: the process whose pid the file holds has ended (a zombie counts as ended)
  local state
  state=$(cut -d' ' -f3 "/proc/$(cat "$1")/stat" 2>/dev/null)
  [ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ]
}
lacks() {  # lacks text file: the file does not contain the text
  ! grep -qF -- "$1" "$2"
}
