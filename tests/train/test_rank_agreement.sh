#!/usr/bin/env bash
# Ranks of one syncgrad-train job started by hand (RANK, WORLD_SIZE, MASTER_ADDR/PORT; rank 0 serves the store)
# with one option different: --lr, --optimizer, --seed, --max-steps, --batch-size, --epochs or
# --checkpoint-every. Each rank must fail, at start (long before any timeout: a hang guard kills a rank after
# 120 s), naming the option and both values, with the hint to use the same command line; the same options on
# both ranks train (--threads, --workers and a --checkpoint-dir on rank 0 only may differ); a --resume on rank 0
# only is refused naming the resumed steps. Then a 2-rank run under syncgrad-launch reports the test accuracy
# that one process evaluating the saved model gets.
# Usage: test_rank_agreement.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../check.sh"
require_fashion_mnist
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

lacks() { ! grep -qF -- "$1" "$2"; }
free_port() { local line; line=$("$launch" sh -c 'echo $MASTER_PORT'); echo "${line#*: }"; }

# by_hand "rank 0's options" "rank 1's options": runs both ranks; sets s0, s1 and writes $tmp/r0.log, $tmp/r1.log.
by_hand() {
  local port p0 p1
  port=$(free_port)
  # shellcheck disable=SC2086
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=0 \
    timeout 120 "$train" --model mlp --log-every 5 $1 >"$tmp/r0.log" 2>&1 &
  p0=$!
  # shellcheck disable=SC2086
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=1 \
    timeout 120 "$train" --model mlp --log-every 5 $2 >"$tmp/r1.log" 2>&1 &
  p1=$!
  wait $p0; s0=$?
  wait $p1; s1=$?
}

# refused "what" "rank 0's options" "rank 1's options" "the expected difference"
refused() {
  by_hand "--workers 0 $2" "--workers 0 $3"
  tail -1 "$tmp/r1.log"
  check "$1: rank 0 fails (not killed by the hang guard)" test "$s0" -ne 0 -a "$s0" -ne 124
  check "$1: rank 1 fails (not killed by the hang guard)" test "$s1" -ne 0 -a "$s1" -ne 124
  for r in 0 1; do
    check "$1: rank $r names the difference" grep -qF -- "command line: the ranks disagree: $4" "$tmp/r$r.log"
    check "$1: rank $r says to use the same command line" grep -qF "start every rank with the same command line" \
      "$tmp/r$r.log"
    check "$1: rank $r did not train" lacks "step 5/" "$tmp/r$r.log"
  done
}
refused "--lr" "--lr 0.05 --max-steps 10" "--lr 0.1 --max-steps 10" "rank 1 has --lr 0.1, rank 0 has 0.05"
refused "--optimizer" "--max-steps 10" "--optimizer adam --max-steps 10" "rank 1 has --optimizer adam, rank 0 has sgd"
refused "--seed" "--seed 1 --max-steps 10" "--seed 2 --max-steps 10" "rank 1 has --seed 2, rank 0 has 1"
refused "--max-steps" "--max-steps 10" "--max-steps 20" "rank 1 has --max-steps 20, rank 0 has 10"
refused "--batch-size" "--batch-size 64 --max-steps 10" "--batch-size 32 --max-steps 10" \
  "rank 1 has --batch-size 32, rank 0 has 64"
refused "--epochs" "--epochs 1 --max-steps 10" "--epochs 2 --max-steps 10" "rank 1 has --epochs 2, rank 0 has 1"
refused "--checkpoint-every" "--checkpoint-every 5 --max-steps 10" "--checkpoint-every 4 --max-steps 10" \
  "rank 1 has --checkpoint-every 4, rank 0 has 5"

# What may differ per rank does: --threads, --workers and rank 0's outputs.
by_hand "--max-steps 10 --threads 1 --workers 0 --checkpoint-dir $tmp/own" "--max-steps 10 --threads 2 --workers 1"
tail -1 "$tmp/r0.log" "$tmp/r1.log"
check "the same options (but --threads, --workers, --checkpoint-dir) train: rank 0 succeeds" test "$s0" -eq 0
check "the same options train: rank 1 succeeds" test "$s1" -eq 0
check "rank 0 reports the 10 steps" grep -q "^done: 10 steps" "$tmp/r0.log"

# Only rank 0 resumes from that checkpoint: refused, naming the positions.
by_hand "--workers 0 --max-steps 20 --resume $tmp/own" "--workers 0 --max-steps 20"
tail -1 "$tmp/r1.log"
check "a resume on rank 0 only fails on rank 0" test "$s0" -ne 0 -a "$s0" -ne 124
check "a resume on rank 0 only fails on rank 1" test "$s1" -ne 0 -a "$s1" -ne 124
for r in 0 1; do
  check "rank $r names the resumed positions" grep -qF \
    "resumed state: the ranks disagree: rank 1 has resumed at step 0, rank 0 has 10" "$tmp/r$r.log"
done

# Evaluation shared by the ranks gives one process's test accuracy for the same weights: the saved model,
# evaluated alone after a step with --lr 0 (which leaves an MLP's weights as they are).
out=$("$launch" --nproc-per-node 2 "$train" --model mlp --workers 1 --max-steps 30 --log-every 30 \
  --checkpoint-dir "$tmp/ddp" 2>&1); status=$?
echo "$out" | tail -1
check "the 2-rank run succeeds" test $status -eq 0
ddp_accuracy=$(grep -o '^\[rank0\]: done: .*test accuracy [0-9.]*%' <<<"$out" | grep -o 'test accuracy [0-9.]*%')
model=$(find "$tmp/ddp" -name model.safetensors | head -1)
out=$("$train" --model mlp --workers 0 --init-from "$model" --lr 0 --max-steps 1 2>&1); status=$?
echo "$out" | tail -1
check "one process evaluates the saved model" test $status -eq 0
alone_accuracy=$(grep -o '^done: .*test accuracy [0-9.]*%' <<<"$out" | grep -o 'test accuracy [0-9.]*%')
check "the DDP run's test accuracy ($ddp_accuracy) is one process's ($alone_accuracy)" \
  test -n "$ddp_accuracy" -a "$ddp_accuracy" = "$alone_accuracy"
finish
