#!/usr/bin/env bash
# syncgrad-launch --max-restarts N (one node): when a rank fails, all ranks are stopped and started again with a
# fresh store and SYNCGRAD_RESTART_COUNT (0 on the first attempt), up to N times; then the launcher exits with the
# failure's status, saying restarts are exhausted. Status 75 (preempted) and a stop signal to the launcher never
# restart. A 2-rank syncgrad-train run whose rank 1 is killed -9 once mid-run (after its first checkpoint) resumes
# by itself (--resume auto) and ends with the weights of an uninterrupted run, bit for bit.
# Usage: test_restarts.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch=$(realpath "$1"); train=$(realpath "$2")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
victim=""
cleanup() { if [ -n "$victim" ]; then kill -KILL "$victim" 2>/dev/null; fi; rm -rf "$tmp"; }
trap cleanup EXIT

fails_with() {  # fails_with status "fragment" args...: the launcher exits with status and says fragment
  local want="$1" fragment="$2"; shift 2
  local out status
  out=$("$launch" "$@" 2>&1); status=$?
  if [ $status -ne "$want" ]; then echo "  status $status, wanted $want: $out"; return 1; fi
  if ! grep -qF -- "$fragment" <<<"$out"; then echo "  '$fragment' not in: $out"; return 1; fi
}
for bad in -1 abc 1e9 10001; do
  check "--max-restarts $bad is refused, naming the value and the range" \
    fails_with 2 "--max-restarts $bad: expected an integer 0..10000" --max-restarts "$bad" true
done
check "--help mentions --max-restarts and SYNCGRAD_RESTART_COUNT" \
  bash -c '"$1" --help | tr -s " \n" " " | grep -q -- "--max-restarts N=0 .*SYNCGRAD_RESTART_COUNT"' _ "$launch"

# Rank 1 fails on attempts 0 and 1 and succeeds on attempt 2: the job succeeds, each rank saw each count.
"$launch" --nproc-per-node 2 --max-restarts 2 sh -c 'echo "attempt $SYNCGRAD_RESTART_COUNT"
  if [ "$RANK" = 1 ] && [ "$SYNCGRAD_RESTART_COUNT" -lt 2 ]; then exit 3; fi; sleep 0.2' >"$tmp/out" 2>"$tmp/err"
status=$?
cat "$tmp/err"
check "two failures under --max-restarts 2: the job succeeds" test $status -eq 0
for count in 0 1 2; do
  check "rank 1 saw SYNCGRAD_RESTART_COUNT=$count" grep -qx "\[rank1\]: attempt $count" "$tmp/out"
done
check "rank 0 saw SYNCGRAD_RESTART_COUNT=2" grep -qx "\[rank0\]: attempt 2" "$tmp/out"
check "three attempts, no more" test "$(grep -c '^\[rank1\]: attempt' "$tmp/out")" -eq 3
check "the first restart is announced, naming rank and status" \
  grep -qx 'syncgrad-launch: rank 1 exited with status 3; restarting all ranks (restart 1 of 2)' "$tmp/err"
check "so is the second" grep -q 'restarting all ranks (restart 2 of 2)' "$tmp/err"

# A rank that always fails (killed by SIGKILL) exhausts --max-restarts 1: status 137, said so.
"$launch" --nproc-per-node 2 --max-restarts 1 sh -c 'echo "attempt $SYNCGRAD_RESTART_COUNT"
  if [ "$RANK" = 0 ]; then kill -KILL $$; fi; sleep 60' >"$tmp/out" 2>"$tmp/err"; status=$?
cat "$tmp/err"
check "always failing: the launcher exits with the failure's status (137)" test $status -eq 137
check "always failing: one restart made" grep -q 'was killed by SIGKILL (signal 9); restarting all ranks (restart 1 of 1)' "$tmp/err"
check "always failing: then restarts are exhausted" \
  grep -qx 'syncgrad-launch: rank 0 was killed by SIGKILL (signal 9); restarts exhausted (1 of 1 used, --max-restarts 1); exiting with status 137' "$tmp/err"
check "always failing: two attempts" test "$(grep -c '^\[rank0\]: attempt' "$tmp/out")" -eq 2

# The default (0): no restart, the launcher's one line as before.
"$launch" --nproc-per-node 2 sh -c 'echo "attempt $SYNCGRAD_RESTART_COUNT"; [ "$RANK" = 1 ] && exit 5; sleep 60' \
  >"$tmp/out" 2>"$tmp/err"; status=$?
check "default: status 5, no restart" test $status -eq 5 -a "$(grep -c attempt "$tmp/out")" -le 2
check "default: attempt 0 only" lacks "attempt 1" "$tmp/out"
check "default: one launcher line only" test "$(grep -c '^syncgrad-launch:' "$tmp/err")" -eq 1

# A preempted rank (status 75) is passed on, not restarted.
"$launch" --nproc-per-node 2 --max-restarts 3 sh -c 'echo "attempt $SYNCGRAD_RESTART_COUNT"; [ "$RANK" = 1 ] && exit 75
  sleep 60' >"$tmp/out" 2>"$tmp/err"; status=$?
check "preempted rank: status 75" test $status -eq 75
check "preempted rank: no restart" lacks "restarting" "$tmp/err"
check "preempted rank: attempt 0 only" lacks "attempt 1" "$tmp/out"

# SIGTERM to the launcher stops the job without a restart, even with restarts left.
"$launch" --nproc-per-node 2 --max-restarts 3 sh -c "echo \"attempt \$SYNCGRAD_RESTART_COUNT\"
  touch $tmp/up.\$RANK; sleep 60" >"$tmp/out" 2>"$tmp/err" &
victim=$!
check "sigterm: both ranks are up" wait_for 30 test -e "$tmp/up.0" -a -e "$tmp/up.1"
kill -TERM $victim
wait $victim; status=$?; victim=""
check "sigterm: the launcher exits 143" test $status -eq 143
check "sigterm: no restart" lacks "restarting" "$tmp/err"
check "sigterm: attempt 0 only" lacks "attempt 1" "$tmp/out"

# SIGTERM while the ranks are being stopped after a failure: no restart either, the failure's status.
"$launch" --nproc-per-node 2 --max-restarts 3 --grace-period 30 sh -c "echo \"attempt \$SYNCGRAD_RESTART_COUNT\"
  if [ \$RANK = 1 ]; then until [ -e $tmp/stubborn ]; do sleep 0.01; done; exit 4; fi
  trap '' TERM; touch $tmp/stubborn; sleep 60" >"$tmp/out" 2>"$tmp/err" &
victim=$!
check "sigterm while stopping: rank 1 failed" wait_for 30 grep -q "stopping the other 1 rank" "$tmp/err"
kill -TERM $victim
wait $victim; status=$?; victim=""
check "sigterm while stopping: the failing rank's status (4)" test $status -eq 4
check "sigterm while stopping: no restart" lacks "restarting" "$tmp/err"
check "sigterm while stopping: attempt 0 only" lacks "attempt 1" "$tmp/out"

# syncgrad-train under --max-restarts 2 on a fixed --master-port (bound again for the restart): rank 1 is killed
# -9 once, after the first checkpoint (every save is held 200 ms, so the kill lands before the run ends).
for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
args=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16" --batch-size 4
  --optimizer adamw --lr 0.01 --workers 1 --log-every 4 --epochs 1000 --max-steps 40 --checkpoint-every 4)
dir="$tmp/restarted"
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
# Attempt 0, rank 1: killed -9 once the first checkpoint is complete.
if [ "\$SYNCGRAD_RESTART_COUNT" = 0 ] && [ "\$RANK" = 1 ]; then
  ( until [ -f "$dir/step-000004/manifest.json" ]; do sleep 0.02; done; kill -KILL \$\$ ) &
fi
exec "$train" "\$@"
EOF
chmod +x "$tmp/rank.sh"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null)
port_flag=(); if [ -n "$port" ]; then port_flag=(--master-port "$port"); fi
echo "train: ${port:+fixed --master-port $port, bound again for the restart}${port:-a free port per attempt (no python3)}"
SYNCGRAD_TEST_SAVE_DELAY_MS=200 "$launch" --nproc-per-node 2 --max-restarts 2 "${port_flag[@]}" "$tmp/rank.sh" \
  "${args[@]}" --resume auto --checkpoint-dir "$dir" >"$tmp/train.log" 2>&1; status=$?
grep -v "step " "$tmp/train.log" | tail -8
check "train: the job ends with status 0 after the kill" test $status -eq 0
check "train: rank 1's death restarted the job" \
  grep -q '^syncgrad-launch: rank 1 was killed by SIGKILL (signal 9); restarting all ranks (restart 1 of 2)' "$tmp/train.log"
check "train: one restart only" test "$(grep -c 'restarting all ranks' "$tmp/train.log")" -eq 1
check "train: the restarted ranks resumed from a checkpoint" grep -q "resumed from $dir/step-" "$tmp/train.log"
SYNCGRAD_TEST_SAVE_DELAY_MS=200 "$launch" --nproc-per-node 2 "$train" "${args[@]}" --checkpoint-dir "$tmp/straight" \
  >"$tmp/straight.log" 2>&1; status=$?
check "train: an uninterrupted run succeeds" test $status -eq 0
check "train: the restarted job's weights equal the uninterrupted run's, bit for bit" \
  cmp -s "$dir/step-000040/model.safetensors" "$tmp/straight/step-000040/model.safetensors"
check "train: so does the training state" \
  cmp -s "$dir/step-000040/training_state.safetensors" "$tmp/straight/step-000040/training_state.safetensors"
finish
