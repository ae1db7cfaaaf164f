#!/usr/bin/env bash
# Ctrl-C (SIGINT) or SIGTERM to the launcher stops every rank the same way a failure does and the launcher
# exits with 128+signal; a second signal kills at once. Usage: test_signals.sh path/to/syncgrad-launch
set -u
launch=$(realpath "$1")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
started() { [ -s "$tmp/sleep.0" ] && [ -s "$tmp/sleep.1" ]; }

for sig in INT TERM; do
  rm -f "$tmp"/sleep.*
  "$launch" --nproc-per-node 2 sh -c "sleep 60 & echo \$! >$tmp/sleep.\$RANK; wait" 2>"$tmp/err" &
  launcher=$!
  check "SIG$sig: ranks started" wait_for 10 started
  start=$(date +%s%N)
  kill -$sig $launcher
  wait $launcher; status=$?
  ms=$(elapsed_ms "$start")
  echo "SIG$sig to the launcher: all ranks gone after ${ms} ms"
  check "SIG$sig: status 128+signal ($status)" test $status -eq $((128 + $(kill -l $sig)))
  # Stopped by the SIGTERM itself, not by the SIGKILL that follows the 5 s grace period (no fixed wall-time
  # bound: how long processes take to exit depends on the machine's load).
  check "SIG$sig: stopped within the grace period, no SIGKILL (${ms} ms)" lacks 'sending SIGKILL' "$tmp/err"
  check "SIG$sig: reported" grep -q "syncgrad-launch: got SIG$sig; stopping 2 ranks" "$tmp/err"
  check "SIG$sig: rank 0's child gone" wait_for 2 gone "$tmp/sleep.0"
  check "SIG$sig: rank 1's child gone" wait_for 2 gone "$tmp/sleep.1"
done

# Ranks that ignore SIGTERM: a second SIGINT kills them without waiting for the 60 s grace period.
rm -f "$tmp"/sleep.*
"$launch" --nproc-per-node 2 --grace-period 60 sh -c "trap '' TERM; sleep 60 & echo \$! >$tmp/sleep.\$RANK; wait" \
  2>"$tmp/err" &
launcher=$!
check "second signal: ranks started" wait_for 10 started
start=$(date +%s%N)
kill -INT $launcher
check "second signal: first one reported" wait_for 5 grep -q 'got SIGINT; stopping' "$tmp/err"
kill -INT $launcher
wait $launcher; status=$?
ms=$(elapsed_ms "$start")
check "second signal: status 130" test $status -eq 130
check "second signal: killed without waiting for the 60 s grace period (${ms} ms)" test "$ms" -lt 30000
check "second signal: reported" grep -q 'got SIGINT again; killing the ranks (SIGKILL)' "$tmp/err"
check "second signal: children gone" wait_for 2 gone "$tmp/sleep.0"
finish
