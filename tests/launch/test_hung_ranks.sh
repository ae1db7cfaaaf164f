#!/usr/bin/env bash
# syncgrad-launch's hang detection (one node): ranks beat on their heartbeat pipe while their collectives finish.
# Both ranks stopped with SIGSTOP (so neither's own collective timeout can fire) are killed as hung once silent
# for the collective timeout and 5 s, and --max-restarts starts the job again; a rank that goes on working after
# its last collective (its process group destroyed) for longer than that is left alone.
# Usage: test_hung_ranks.sh path/to/syncgrad-launch path/to/launch_rank_probe
set -u
launch=$(realpath "$1")
probe=$(realpath "$2")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
victim=""
cleanup() {
  if [ -n "$victim" ]; then kill -KILL "$victim" 2>/dev/null; fi
  for f in "$tmp"/pid.*; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# Attempt 0 allreduces in a loop (and is stopped by the test); attempt 1 joins, allreduces once and ends.
printf '#!/bin/sh\nif [ "$SYNCGRAD_RESTART_COUNT" = 0 ]; then exec "%s" --pid-dir "%s" --loop; fi\nexec "%s"\n' \
  "$probe" "$tmp" "$probe" >"$tmp/rank.sh"
chmod +x "$tmp/rank.sh"
"$launch" --nproc-per-node 2 --max-restarts 1 --timeout 2 --grace-period 1 "$tmp/rank.sh" >"$tmp/out" 2>"$tmp/err" &
victim=$!
check "both ranks joined" wait_for 30 test -s "$tmp/pid.0" -a -s "$tmp/pid.1"
sleep 2.5  # a few beats (one a second)
kill -STOP "$(cat "$tmp/pid.0")" "$(cat "$tmp/pid.1")"
echo $victim >"$tmp/launcher"
check "the launcher ends (hang guard 60 s)" wait_for 60 gone "$tmp/launcher"
wait $victim; status=$?; victim=""
cat "$tmp/err"
check "the job succeeds after the restart" test $status -eq 0
check "a stopped rank is named as hung and killed" \
  grep -qE '^syncgrad-launch: rank [01] \(pid [0-9]+\) has made no progress for [0-9.]+ s \(its heartbeat stopped; the limit is the collective timeout and 5 s\): it is hung' "$tmp/err"
check "... which restarts the job" grep -q 'was killed by SIGKILL (signal 9); restarting all ranks (restart 1 of 1)' "$tmp/err"
check "attempt 1's ranks joined" grep -q '^\[rank1\]: joined: rank 1 of 2' "$tmp/out"

# Work after the last collective: the rank's group is destroyed (it says it is idle), then its wrapper sleeps past
# the hang limit (2 s + 5 s): not a hang.
"$launch" --nproc-per-node 2 --timeout 2 sh -c "\"$probe\" && sleep 8 && echo post-processing done" \
  >"$tmp/out" 2>"$tmp/err"; status=$?
cat "$tmp/err"
check "work after the last collective: the job succeeds" test $status -eq 0
check "... no rank taken for hung" lacks "is hung" "$tmp/err"
check "... both finished their work" test "$(grep -c 'post-processing done' "$tmp/out")" -eq 2
finish
