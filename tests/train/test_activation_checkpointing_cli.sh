#!/usr/bin/env bash
# syncgrad-train --activation-checkpointing: a GPT with dropout trains to the same losses with and without it,
# alone and as 2 DDP ranks under syncgrad-launch (static_graph), and it is refused, naming the flag, for a model
# without checkpointable blocks and with --parallel dp.
# Usage: test_activation_checkpointing_cli.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
config="block_size=16,n_layer=2,n_head=2,n_embd=16,dropout=0.1"
gpt() { "$train" --model gpt --data-dir "$tmp/text" --model-config "$config" --batch-size 8 --optimizer adamw \
  --lr 0.01 --workers 0 --max-steps 6 --log-every 2 --seed 4 "$@"; }
losses() { grep -o "loss [0-9.]*" <<<"$1"; }

plain=$(gpt 2>&1); status=$?
check "a GPT run without checkpointing succeeds" test $status -eq 0
checkpointed=$(gpt --activation-checkpointing 2>&1); status=$?
echo "$checkpointed" | tail -2
check "the same run with --activation-checkpointing succeeds" test $status -eq 0
check "its losses are the same" test "$(losses "$plain")" = "$(losses "$checkpointed")"
check "and there are losses to compare" test "$(losses "$plain" | wc -l)" -ge 4

ddp() { OMP_NUM_THREADS=1 "$launch" --nproc-per-node 2 "$train" --model gpt --data-dir "$tmp/text" \
  --model-config "$config" --batch-size 8 --optimizer adamw --lr 0.01 --workers 0 --max-steps 4 --log-every 2 \
  --seed 4 "$@"; }
plain=$(ddp 2>&1); status=$?
check "2-rank DDP without checkpointing succeeds" test $status -eq 0
checkpointed=$(ddp --activation-checkpointing 2>&1); status=$?
echo "$checkpointed" | tail -2
check "2-rank DDP with --activation-checkpointing succeeds" test $status -eq 0
check "its losses are the same" test "$(losses "$plain")" = "$(losses "$checkpointed")"

out=$("$train" --model mlp --activation-checkpointing --max-steps 1 2>&1); status=$?
check "a model without blocks to checkpoint is refused" test $status -ne 0
check "the refusal names the flag and the model" grep -q -- "--activation-checkpointing: --model mlp (MLP) has no blocks" <<<"$out"
out=$(gpt --activation-checkpointing --parallel dp --dp-workers 2 2>&1); status=$?
check "--parallel dp is refused" test $status -ne 0
check "the refusal names both flags" grep -q -- "--activation-checkpointing with --parallel dp" <<<"$out"
finish
