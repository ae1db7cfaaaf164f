#!/usr/bin/env bash
# One --checkpoint-dir, one run at a time: while a run holds D/.lock a second run on D is refused before it
# trains, naming the first's pid; once the first is killed (SIGKILL: no clean-up) a third run on D starts and
# saves. Usage: test_checkpoint_lock.sh path/to/syncgrad-train
set -u
bin="$1"
. "$(dirname "$0")/../check.sh"
require_fashion_mnist
tmp=$(mktemp -d)
first=""
cleanup() { if [ -n "$first" ]; then kill -KILL "$first" 2>/dev/null; fi; rm -rf "$tmp"; }
trap cleanup EXIT
dir="$tmp/ckpt"

# Far more steps than the test lasts (it is killed below), so a loaded machine cannot let it finish early.
"$bin" --model mlp --epochs 50 --checkpoint-dir "$dir" >"$tmp/first.log" 2>&1 &
first=$!
for _ in $(seq 1 600); do
  if [ -s "$dir/.lock" ] || ! kill -0 "$first" 2>/dev/null; then break; fi
  sleep 0.1
done
check "the first run holds the lock" test -s "$dir/.lock"
check "the lock file names the first run's pid" grep -qx "pid $first" "$dir/.lock"

out=$("$bin" --model mlp --max-steps 5 --checkpoint-dir "$dir" 2>&1); status=$?
echo "$out" | tail -2
check "the first run is still running" kill -0 "$first"
check "a second run on the same directory fails" test $status -ne 0
check "the refusal names the directory and the first run's pid" \
  grep -q -- "--checkpoint-dir $dir is in use by another run (pid $first on host " <<<"$out"
check "the second run did not train" test "$(grep -c 'test accuracy' <<<"$out")" -eq 0

kill -KILL "$first"; wait "$first" 2>/dev/null; first=""
out=$("$bin" --model mlp --max-steps 5 --checkpoint-dir "$dir" 2>&1); status=$?
echo "$out" | tail -2
check "after the first is killed a third run on the directory succeeds" test $status -eq 0
check "the third run saved its checkpoint" test -s "$dir/latest/model.safetensors"
finish
