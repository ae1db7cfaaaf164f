#!/usr/bin/env bash
# examples/uneven_join.cpp under syncgrad-launch with 2 ranks of 10 and 13 batches (unpadded slices of
# Fashion-MNIST): inside DistributedDataParallel::join both ranks finish, the short one took part in the other's
# 3 extra steps and both end with rank 1's parameters (both divisions); without the guard the long rank's next
# step fails with an error that says a rank ran fewer steps, instead of hanging. Skipped (77) without
# Fashion-MNIST. Usage: test_uneven_join_example.sh path/to/syncgrad-launch path/to/example
set -u
launch=$(realpath "$1"); example=$(realpath "$2")
. "$(dirname "$0")/../check.sh"
data="${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}"
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then echo "skipped: no Fashion-MNIST in $data"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for mode in join join-by-training; do
  timeout 120 "$launch" --nproc-per-node 2 "$example" 10,13 "$mode" >"$tmp/$mode.log" 2>&1
  status=$?
  cat "$tmp/$mode.log"
  check "$mode: both ranks finished" test $status -eq 0
  check "$mode: rank 0 ran 10 batches and took part in 3 more steps" \
    grep -q "rank 0: 10 batches, took part in 3 more steps, parameters from rank 1" "$tmp/$mode.log"
  check "$mode: rank 1 ran 13 batches" grep -q "rank 1: 13 batches, took part in 0 more steps" "$tmp/$mode.log"
  check "$mode: rank 1 holds rank 0's parameters" grep -q "rank 1: parameters identical to rank 0's" "$tmp/$mode.log"
done

# Without the guard: a clear error (the short rank exited), not a hang; the launcher reports the failure.
timeout 120 "$launch" --nproc-per-node 2 "$example" 10,13 no-join >"$tmp/no-join.log" 2>&1
status=$?
cat "$tmp/no-join.log"
check "no-join: the job failed (not killed by the hang guard)" test $status -ne 0 -a $status -ne 124
check "no-join: the error says a rank ran fewer steps and points to join()" grep -q "ran fewer steps.*join()" "$tmp/no-join.log"
check "an unknown mode is refused, naming it" \
  sh -c "'$example' 10 sideways 2>&1 | grep -q 'unknown mode \"sideways\"'"
finish
