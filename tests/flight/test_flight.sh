#!/usr/bin/env bash
# The flight recorder end to end, 2 ranks under syncgrad-launch with a 4 s collective timeout: a rank that skips a
# collective, a rank stopped (SIGSTOP) inside backward, and a shape mismatch under SYNCGRAD_DEBUG=detail. Each time
# the error says where the ranks diverged, within the timeout (hang guard 40 s), the surviving ranks' dumps are in
# SYNCGRAD_FLIGHT_DIR and syncgrad-debug flight merges them; then syncgrad-debug's answers to bad inputs.
# Usage: test_flight.sh path/to/syncgrad-launch path/to/flight_probe path/to/syncgrad-debug
set -u
launch=$(realpath "$1")
probe=$(realpath "$2")
debug=$(realpath "$3")
. "$(dirname "$0")/../launch/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run_probe() {  # run_probe mode dir [env...]: the job's stdout in $tmp/mode.out, its stderr in $tmp/mode.err
  local mode=$1 dir=$2; shift 2
  mkdir -p "$dir"
  env SYNCGRAD_FLIGHT_DIR="$dir" "$@" timeout 40 "$launch" --nproc-per-node 2 --timeout 4 --grace-period 5 \
    "$probe" "$mode" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
}

# 1. Rank 1 skips "step 2" and stays alive: rank 0 times out there and names rank 1's last collective.
start=$(date +%s%N)
run_probe skip "$tmp/skip"; status=$?
cat "$tmp/skip.out"
check "skip: the job fails" test $status -ne 0 -a $status -ne 124
check "skip: rank 0 times out in step 2" \
  grep -qE '^\[rank0\]: TimeoutError: .*allreduce #2 \(sum, float32, 4096 elements\)' "$tmp/skip.out"
check "skip: ... and says rank 1 never called it, naming its last collective" \
  grep -qE '^\[rank0\]: flight recorder: rank 1 never called collective #2: its last one, allreduce #1 \(step 1, sum, float32 \[4096\], 16\.4 kB\), done [0-9.]+ s ago; rank 0 waits in allreduce #2 \(step 2, sum, float32 \[4096\], 16\.4 kB\), started [0-9.]+ s ago' "$tmp/skip.out"
check "skip: the error came within the timeout and the dump wait (< 20 s)" test "$(elapsed_ms "$start")" -lt 20000
check "skip: both ranks dumped (rank 1 on rank 0's request)" \
  test -s "$tmp/skip/syncgrad_flight_world_rank0.json" -a -s "$tmp/skip/syncgrad_flight_world_rank1.json"
"$debug" flight "$tmp/skip" >"$tmp/skip.view" 2>&1; status=$?
cat "$tmp/skip.view"
check "skip: syncgrad-debug flight reads the dumps" test $status -eq 0
check "skip: ... and points at #2, where rank 1 never called" \
  grep -qE '^first divergence at #2: rank 0: allreduce #2 \(step 2, .*\), failed after [0-9.]+ s; rank 1: never called it \(its last: allreduce #1 \(step 1, .*\), done\)' "$tmp/skip.view"
check "skip: ... marking its row" grep -qE '^>      2  allreduce sum +step 2 ' "$tmp/skip.view"

# 2. Rank 1 stops itself (SIGSTOP) in backward at step 3 after DDP bucket 0: rank 0 times out in bucket 1.
start=$(date +%s%N)
run_probe stop "$tmp/stop"; status=$?
cat "$tmp/stop.out"
check "stop: the job fails" test $status -ne 0 -a $status -ne 124
check "stop: rank 1 stopped in backward" grep -q '^\[rank1\]: rank 1 stops itself in backward' "$tmp/stop.out"
check "stop: rank 0 times out in DDP's step 3" grep -qE '^\[rank0\]: TimeoutError: DistributedDataParallel step 3: ' "$tmp/stop.out"
check "stop: ... and says rank 1 is silent after DDP bucket 0, while rank 0 waits in bucket 1" \
  grep -qE '^\[rank0\]: flight recorder: rank 1 never called collective #[0-9]+: its last one, allreduce #[0-9]+ \(DDP bucket 0, .*\), done [0-9.]+ s ago; its recorder has been silent for [0-9.]+ s \(pid [0-9]+ on .* is stopped, hung in the kernel, or gone\); rank 0 waits in allreduce #[0-9]+ \(DDP bucket 1, ' "$tmp/stop.out"
check "stop: the error came before the launcher's hang kill (< 20 s)" test "$(elapsed_ms "$start")" -lt 20000
check "stop: rank 0 dumped; the stopped rank could not" \
  test -s "$tmp/stop/syncgrad_flight_world_rank0.json" -a ! -e "$tmp/stop/syncgrad_flight_world_rank1.json"
"$debug" flight "$tmp/stop" >"$tmp/stop.view" 2>&1; status=$?
cat "$tmp/stop.view"
check "stop: syncgrad-debug flight reads the dump" test $status -eq 0
check "stop: ... says rank 1 left no dump" grep -q '^  rank 1: no dump' "$tmp/stop.view"
check "stop: ... and shows DDP's step check and buckets" grep -qE 'allreduce sum +DDP step check' "$tmp/stop.view"

# 3. Shapes [1024] and [512] under SYNCGRAD_DEBUG=detail: both ranks fail at once naming both calls.
run_probe mismatch "$tmp/mismatch" SYNCGRAD_DEBUG=detail; status=$?
cat "$tmp/mismatch.out"
check "mismatch: the job fails" test $status -ne 0 -a $status -ne 124
check "mismatch: rank 0 names both calls" \
  grep -qF '[rank0]: DesyncError: SYNCGRAD_DEBUG=detail: collective #2 differs across ranks: rank 0 calls allreduce float32 [1024] sum (shape test), rank 1 calls allreduce float32 [512] sum (shape test)' "$tmp/mismatch.out"
check "mismatch: rank 1 too" \
  grep -qF '[rank1]: DesyncError: SYNCGRAD_DEBUG=detail: collective #2 differs across ranks: rank 1 calls allreduce float32 [512] sum (shape test), rank 0 calls allreduce float32 [1024] sum (shape test)' "$tmp/mismatch.out"
check "mismatch: not a timeout" lacks "TimeoutError" "$tmp/mismatch.out"
check "mismatch: ... and each rank says where the other is" \
  grep -qE '^\[rank0\]: flight recorder: rank 1 (is stuck in|failed in) allreduce #2 \(shape test, sum, float32 \[512\], 2\.0 kB\)' "$tmp/mismatch.out"
"$debug" flight "$tmp/mismatch" >"$tmp/mismatch.view" 2>&1; status=$?
cat "$tmp/mismatch.view"
check "mismatch: syncgrad-debug flight shows both ranks' calls" \
  grep -qE '^ +rank 1 called allreduce #2 \(shape test, sum, float32 \[512\], 2\.0 kB\)' "$tmp/mismatch.view"

# A bad SYNCGRAD_DEBUG value is named.
run_probe mismatch "$tmp/bad" SYNCGRAD_DEBUG=verbose
check "SYNCGRAD_DEBUG=verbose is refused by name" grep -qF 'SYNCGRAD_DEBUG="verbose" is not a debug mode' "$tmp/mismatch.out"

# syncgrad-debug's bad inputs.
mkdir -p "$tmp/empty" "$tmp/broken" "$tmp/mixed"
"$debug" flight "$tmp/empty" 2>"$tmp/err"; status=$?
check "empty directory: status 2" test $status -eq 2
check "... says no dumps are there" grep -q 'no flight recorder dumps' "$tmp/err"
"$debug" flight "$tmp/nonexistent" 2>"$tmp/err"; status=$?
check "missing directory: named" grep -q 'nonexistent is not a directory' "$tmp/err"
echo '{"format": "syncgrad-flight-recorder 1", "run": ' >"$tmp/broken/syncgrad_flight_world_rank0.json"
"$debug" flight "$tmp/broken" 2>"$tmp/err"; status=$?
check "malformed dump: status 2" test $status -eq 2
check "... named as malformed" grep -q 'syncgrad_flight_world_rank0.json is not a syncgrad flight recorder dump (malformed JSON' "$tmp/err"
cp "$tmp/skip/syncgrad_flight_world_rank0.json" "$tmp/mixed/"
cp "$tmp/mismatch/syncgrad_flight_world_rank1.json" "$tmp/mixed/"
"$debug" flight "$tmp/mixed" 2>"$tmp/err"; status=$?
check "dumps of two runs: status 2" test $status -eq 2
check "... named as different runs" grep -q 'come from different runs' "$tmp/err"
finish
