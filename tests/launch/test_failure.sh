#!/usr/bin/env bash
# When a rank fails, the launcher stops the other ranks (SIGTERM to each rank's process group, SIGKILL after
# --grace-period), names the failing rank, its pid and status in one line, and exits with that status
# (128+signal when it was killed). Usage: test_failure.sh path/to/syncgrad-launch
set -u
launch=$(realpath "$1")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Ranks 0 and 2 sleep in a child process (same process group) for a minute; rank 1 fails once they do.
start=$(date +%s%N)
"$launch" --nproc-per-node 3 sh -c "if [ \$RANK = 1 ]; then \
  until [ -s $tmp/sleep.0 ] && [ -s $tmp/sleep.2 ]; do sleep 0.01; done; touch $tmp/failed; exit 7; fi; \
  sleep 60 & echo \$! >$tmp/sleep.\$RANK; wait" 2>"$tmp/err"; status=$?
ms=$(elapsed_ms "$(stat -c %.9Y "$tmp/failed" | tr -d .)")
echo "a failing rank's peers were stopped ${ms} ms after it failed; $(elapsed_ms "$start") ms for the whole job"
check "exit status is the failing rank's (7)" test $status -eq 7
check "peers stopped by SIGTERM within the 5 s grace period: no SIGKILL (${ms} ms)" lacks 'sending SIGKILL' "$tmp/err"
check "one line names rank, pid and status" \
  grep -qE '^syncgrad-launch: rank 1 \(pid [0-9]+\) exited with status 7; stopping the other 2 ranks' "$tmp/err"
check "one launcher line only" test "$(grep -c '^syncgrad-launch:' "$tmp/err")" -eq 1
check "rank 0's child process was stopped too" wait_for 2 gone "$tmp/sleep.0"
check "rank 2's child process was stopped too" wait_for 2 gone "$tmp/sleep.2"

"$launch" --nproc-per-node 2 sh -c 'if [ $RANK = 0 ]; then kill -KILL $$; fi; sleep 60' 2>"$tmp/err"; status=$?
check "a rank killed by SIGKILL: status 137" test $status -eq 137
check "... and the line says so" grep -qE 'rank 0 \(pid [0-9]+\) was killed by SIGKILL \(signal 9\)' "$tmp/err"

# Rank 0 ignores SIGTERM: it is killed once the 1 s grace period is over.
start=$(date +%s%N)
"$launch" --nproc-per-node 2 --grace-period 1 sh -c "if [ \$RANK = 1 ]; then \
  until [ -s $tmp/stubborn ]; do sleep 0.01; done; exit 3; fi; \
  trap '' TERM; sleep 60 & echo \$! >$tmp/stubborn; wait" 2>"$tmp/err"; status=$?
ms=$(elapsed_ms "$start")
echo "a rank ignoring SIGTERM was killed after ${ms} ms (--grace-period 1)"
check "stubborn peer: status is the failing rank's (3)" test $status -eq 3
check "stubborn peer: SIGKILL not before the 1 s grace period is over (${ms} ms)" test "$ms" -ge 900 -a "$ms" -lt 30000
check "stubborn peer: the escalation is reported" grep -q 'rank(s) 0 still running 1 s after SIGTERM; sending SIGKILL' "$tmp/err"
check "stubborn peer: its child is gone" wait_for 2 gone "$tmp/stubborn"

"$launch" --nproc-per-node 2 sh -c 'if [ $RANK = 0 ]; then exit 0; fi; sleep 0.3; exit 5' 2>"$tmp/err"; status=$?
check "a rank that finished early does not hide a later failure" test $status -eq 5
"$launch" --nproc-per-node 3 sh -c 'sleep 0.$RANK' 2>"$tmp/err"; status=$?
check "all ranks succeed: status 0" test $status -eq 0
check "all ranks succeed: the launcher says nothing" test ! -s "$tmp/err"
finish
