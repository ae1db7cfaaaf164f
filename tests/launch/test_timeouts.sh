#!/usr/bin/env bash
# The collective and rendezvous timeouts are settable: syncgrad-launch --timeout / --rendezvous-timeout export
# SYNCGRAD_TIMEOUT / SYNCGRAD_RENDEZVOUS_TIMEOUT, which init_process_group() applies to a program that sets
# neither (a user's own loop), while a program's own value wins. They tell a hung rank from a dead one: a rank
# stopped by SIGSTOP makes its peer fail with a TimeoutError naming it once the timeout is over, a rank killed
# by SIGKILL makes it fail with a PeerError (lost connection) long before the timeout. syncgrad-train takes
# the same two flags. Bad values are refused naming the value and the range.
# Usage: test_timeouts.sh path/to/syncgrad-launch path/to/launch_rank_probe [path/to/syncgrad-train]
set -u
launch=$(realpath "$1")
probe=$(realpath "$2")
train=${3:+$(realpath "$3")}
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
launcher=
trap '[ -n "$launcher" ] && kill -KILL $launcher 2>/dev/null; rm -rf "$tmp"' EXIT

joined() {  # joined rank timeout_ms rendezvous_ms: the probe's start-up line for that rank is in $tmp/out
  grep -qF "[rank$1]: joined: rank $1 of 2, timeout $2 ms, rendezvous timeout $3 ms" "$tmp/out"
}
"$launch" --nproc-per-node 2 --timeout 7 --rendezvous-timeout 9.5 "$probe" >"$tmp/out" 2>&1
check "--timeout 7 --rendezvous-timeout 9.5 reach rank 0" joined 0 7000 9500
check "... and rank 1" joined 1 7000 9500
"$launch" --nproc-per-node 2 "$probe" >"$tmp/out" 2>&1
check "without the flags: 600 s and 300 s, as before" joined 0 600000 300000
"$launch" --nproc-per-node 2 --timeout 7 --rendezvous-timeout 9 "$probe" --timeout 11 --rendezvous-timeout 13 \
  >"$tmp/out" 2>&1
check "the program's own timeouts win over the launcher's" joined 1 11000 13000

# start_loop --timeout S [--elements N] [--rendezvous-timeout S]: two ranks allreducing N floats in a loop that
# ignore SIGTERM (so that the launcher stopping the job cannot end rank 0 before it has reported its own error),
# pids in $tmp/pid.RANK; flags other than --elements go to the launcher.
start_loop() {
  rm -f "$tmp"/pid.*
  local timeout=$1 seconds=$2 more=()
  shift 2
  local elements=1024
  while [ $# -gt 0 ]; do
    case $1 in
      --elements) elements=$2 ;;
      *) more+=("$1" "$2") ;;
    esac
    shift 2
  done
  "$launch" --nproc-per-node 2 --grace-period 60 "$timeout" "$seconds" "${more[@]}" "$probe" --loop --ignore-term \
    --elements "$elements" --pid-dir "$tmp" >"$tmp/out" 2>&1 &
  launcher=$!
  wait_for 60 test -s "$tmp/pid.0" -a -s "$tmp/pid.1"
}
rank0_error() { grep '^\[rank0\]: [A-Za-z]*Error: ' "$tmp/out"; }

# A hung rank: alive, connected and silent -- on the small-message path and on Gloo's asynchronous one (12 MB).
for elements in 1024 3000000; do
  check "hung rank ($elements elements): both ranks run the loop" start_loop --timeout 3 --elements "$elements"
  start=$(date +%s%N)
  kill -STOP "$(cat "$tmp/pid.1")"
  wait $launcher; status=$?; launcher=
  hung_ms=$(elapsed_ms "$start")
  grep -v joined "$tmp/out"
  echo "a hung rank was reported after ${hung_ms} ms (--timeout 3, $elements elements)"
  check "hung rank ($elements elements): rank 0 says TimeoutError, naming rank 1 and the 3 s" \
    grep -qE '^\[rank0\]: TimeoutError: rank 0: allreduce .*timed out after 3000 ms waiting for rank 1' "$tmp/out"
  check "hung rank ($elements elements): not reported as a lost peer" test "$(rank0_error | grep -c 'PeerError')" -eq 0
  check "hung rank ($elements elements): the launcher exits with rank 0's status (3)" test $status -eq 3
  check "hung rank ($elements elements): the stopped rank is gone too" wait_for 10 gone "$tmp/pid.1"
  # The launcher's SIGTERM comes with a SIGCONT, so the stopped rank ends without waiting for the 60 s SIGKILL.
  check "hung rank ($elements elements): woken by the launcher, the stopped rank ended before SIGKILL" \
    lacks 'sending SIGKILL' "$tmp/out"
  # Once running again it reports rank 0 instead of dying silently of SIGPIPE: as a lost connection, or, when its
  # own deadline passed while it was stopped (Gloo's asynchronous path), as a timeout waiting for rank 0 -- from
  # Gloo, or from the collective's own deadline (2 s later) with the flight recorder's line naming rank 0.
  check "hung rank ($elements elements): once running again it reports rank 0 (no silent SIGPIPE death)" \
    grep -qE '^\[rank1\]: (PeerError: .*lost the connection to rank 0|TimeoutError: .*waiting for rank 0|flight recorder: rank 0 is )' "$tmp/out"
done

# A dead rank: its connections close at once.
check "dead rank: both ranks run the loop" start_loop --timeout 60
start=$(date +%s%N)
kill -KILL "$(cat "$tmp/pid.1")"
check "dead rank: rank 0 reports an error" wait_for 120 rank0_error
dead_ms=$(elapsed_ms "$start")
wait $launcher; status=$?; launcher=
cat "$tmp/out" | grep -v joined
echo "a dead rank was reported after ${dead_ms} ms (--timeout 60)"
check "dead rank: rank 0 says PeerError, lost the connection to rank 1" \
  grep -qE '^\[rank0\]: PeerError: rank 0: allreduce .*lost the connection to rank 1' "$tmp/out"
check "dead rank: not a timeout" test "$(rank0_error | grep -c 'TimeoutError')" -eq 0
check "dead rank: told apart before a hung rank's (much shorter) timeout would be (${dead_ms} < ${hung_ms} ms)" \
  test "$dead_ms" -lt "$hung_ms"
check "dead rank: the launcher exits with rank 1's status (137)" test $status -eq 137

# The same on a busy machine: the launcher wakes only after the killed rank 1 and rank 0, which lost its connection
# to it, have both ended (the launcher is stopped meanwhile; it hosts the store, which rank 0's flight recorder
# then gives up on after the 2 s rendezvous timeout); it still reports rank 1, not rank 0 first in rank order.
check "dead rank, busy launcher: both ranks run the loop" start_loop --timeout 60 --rendezvous-timeout 2
kill -STOP $launcher
kill -KILL "$(cat "$tmp/pid.1")"
check "dead rank, busy launcher: rank 0 ends on its own" wait_for 60 gone "$tmp/pid.0"
kill -CONT $launcher
wait $launcher; status=$?; launcher=
check "dead rank, busy launcher: the launcher exits with rank 1's status (137)" test $status -eq 137
check "dead rank, busy launcher: it names rank 1 as the failed one" \
  grep -qE 'rank 1 \(pid [0-9]+\) .*SIGKILL' "$tmp/out"

refused() {  # refused flag value tool [args]: tool flag value args fails, naming the flag, the value and the range
  local flag=$1 value=$2 tool=$3 out status
  shift 3
  out=$("$tool" "$flag" "$value" "$@" 2>&1); status=$?
  if [ $status -eq 0 ]; then echo "  accepted: $flag $value"; return 1; fi
  grep -qF -- "$flag" <<<"$out" && grep -qF -- "$value" <<<"$out" && grep -qF "0.001 to 604800" <<<"$out" ||
    { echo "  unclear: $out"; return 1; }
}
for flag in --timeout --rendezvous-timeout; do
  for value in 0 -1 nan 1e30 abc; do
    check "syncgrad-launch $flag $value is refused" refused $flag $value "$launch" true
    if [ -n "$train" ]; then check "syncgrad-train $flag $value is refused" refused $flag $value "$train"; fi
  done
done
status=0; "$launch" --timeout abc true >/dev/null 2>&1 || status=$?
check "syncgrad-launch: a bad --timeout is a usage error (status 2)" test $status -eq 2

if [ -n "$train" ] && ls /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte* >/dev/null 2>&1; then
  # syncgrad-train --timeout: a hung trainer rank is reported as such after 3 s.
  "$launch" --nproc-per-node 2 --grace-period 60 "$train" --model mlp --workers 0 --epochs 50 --log-every 10 \
    --timeout 3 --rendezvous-timeout 60 >"$tmp/out" 2>&1 &
  launcher=$!
  check "syncgrad-train: both ranks train" wait_for 120 grep -q '^\[rank0\]: epoch' "$tmp/out"
  for pid in $(pgrep -P $launcher); do
    if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx RANK=1; then kill -STOP "$pid"; fi
  done
  wait $launcher; status=$?; launcher=
  grep -i error "$tmp/out"
  check "syncgrad-train --timeout 3: rank 0 fails naming the hung rank 1 after 3000 ms" \
    grep -qE '^\[rank0\]: syncgrad-train: error: .*timed out after 3000 ms waiting for rank 1' "$tmp/out"
  check "syncgrad-train --timeout 3: the launcher fails" test $status -ne 0
fi
finish
