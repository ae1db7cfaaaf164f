#!/usr/bin/env bash
# syncgrad-train --zero 1|2 under syncgrad-launch: the same losses as plain DDP (the GPT, AdamW); a ZeRO-2 run of 2
# ranks checkpointed and resumed by 3 ranks (--elastic) continues exactly as plain DDP resumed from its own
# 2-rank checkpoint, and so does a plain single process resuming the ZeRO checkpoint (its optimizer state is saved
# consolidated, in the plain optimizer's layout); combinations that make no sense are refused, naming the flags.
# Usage: test_zero_cli.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for i in $(seq 200); do echo "a rolling stone gathers no moss, number $((i % 7))."; done >"$tmp/text"
base=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=2,n_head=2,n_embd=32"
  --batch-size 4 --optimizer adamw --lr 0.003 --workers 1 --log-every 1 --epochs 1 --bucket-cap-mb 0.02)

# losses FILE: the loss column of a CSV log.
losses() { awk -F, 'NR > 1 && $10 == "train" { print $1, $3 }' "$1"; }  # step and loss of the train rows

run2() {  # run2 NAME ARGS...: 2 ranks, log in $tmp/NAME.csv
  local name=$1; shift
  "$launch" --nproc-per-node 2 "$train" "${base[@]}" --log-file "$tmp/$name.csv" "$@" >"$tmp/$name.out" 2>&1
}

run2 ddp --max-steps 6; check "plain DDP trains 6 steps" test $? -eq 0
run2 zero1 --max-steps 6 --zero 1; check "--zero 1 trains 6 steps" test $? -eq 0
run2 zero2 --max-steps 6 --zero 2; check "--zero 2 trains 6 steps" test $? -eq 0
check "the plan line names ZeRO-2" grep -q "ZeRO-2" "$tmp/zero2.out"
check "--zero 1 logs DDP's losses" diff <(losses "$tmp/ddp.csv") <(losses "$tmp/zero1.csv")
check "--zero 2 logs DDP's losses" diff <(losses "$tmp/ddp.csv") <(losses "$tmp/zero2.csv")
run2 zero2acc --max-steps 3 --zero 2 --accumulate 2; check "--zero 2 with --accumulate 2 trains" test $? -eq 0
run2 ddpacc --max-steps 3 --accumulate 2
check "with DDP's losses" diff <(losses "$tmp/ddpacc.csv") <(losses "$tmp/zero2acc.csv")

# 2 ranks, 3 steps, checkpoint; then 3 ranks (or 1 process) continue to step 6.
run2 zero2_first --max-steps 3 --zero 2 --checkpoint-dir "$tmp/zck"; check "--zero 2 saves a checkpoint" test $? -eq 0
run2 ddp_first --max-steps 3 --checkpoint-dir "$tmp/dck"; check "DDP saves a checkpoint" test $? -eq 0
"$launch" --nproc-per-node 3 "$train" "${base[@]}" --max-steps 6 --zero 2 --elastic --resume "$tmp/zck" \
  --log-file "$tmp/zero2_3.csv" >"$tmp/z3.out" 2>&1
check "3 ranks resume the 2-rank ZeRO-2 checkpoint with --zero 2 --elastic" test $? -eq 0
"$launch" --nproc-per-node 3 "$train" "${base[@]}" --max-steps 6 --elastic --resume "$tmp/dck" \
  --log-file "$tmp/ddp_3.csv" >"$tmp/d3.out" 2>&1
check "3 ranks resume the 2-rank DDP checkpoint" test $? -eq 0
check "the ZeRO-2 run continues exactly as DDP does" diff <(losses "$tmp/ddp_3.csv") <(losses "$tmp/zero2_3.csv")
check "over steps 4 to 6" test "$(losses "$tmp/zero2_3.csv" | awk '{ print $1 }' | tr '\n' ' ')" = "4 5 6 "
"$launch" --nproc-per-node 3 "$train" "${base[@]}" --max-steps 6 --zero 1 --elastic --resume "$tmp/dck" \
  --log-file "$tmp/zero1_from_ddp.csv" >"$tmp/z1.out" 2>&1
check "a plain DDP checkpoint resumes under --zero 1 (3 ranks), exactly" \
  diff <(losses "$tmp/ddp_3.csv") <(losses "$tmp/zero1_from_ddp.csv")
"$train" "${base[@]}" --max-steps 6 --elastic --resume "$tmp/zck" --log-file "$tmp/single.csv" >"$tmp/s.out" 2>&1
check "1 process resumes the ZeRO-2 checkpoint without --zero" test $? -eq 0
"$train" "${base[@]}" --max-steps 6 --elastic --resume "$tmp/dck" --log-file "$tmp/single_ddp.csv" >/dev/null 2>&1
check "exactly as it resumes the DDP one" diff <(losses "$tmp/single_ddp.csv") <(losses "$tmp/single.csv")

# Refusals.
out=$("$train" "${base[@]}" --max-steps 1 --zero 1 2>&1); status=$?
check "--zero 1 in a single process is refused" test $status -ne 0
check "saying it needs several processes" grep -q -- "--zero 1 shards the optimizer across DDP's ranks" <<<"$out"
out=$("$train" "${base[@]}" --max-steps 1 --zero 3 2>&1); status=$?
check "--zero 3 is refused" test $status -ne 0
check "naming the flag" grep -q -- "--zero" <<<"$out"
out=$(run2 bad --max-steps 1 --zero 2 --comm-hook fp16; cat "$tmp/bad.out"); 
check "--zero 2 --comm-hook fp16 is refused, naming both" grep -q -- "--zero 2 reduce-scatters the gradient buckets itself and takes no --comm-hook (got fp16)" <<<"$out"
out=$("$train" "${base[@]}" --max-steps 1 --zero 1 --parallel dp 2>&1); status=$?
check "--zero 1 --parallel dp is refused" test $status -ne 0
check "naming --parallel dp" grep -q -- "--parallel dp" <<<"$out"
finish
