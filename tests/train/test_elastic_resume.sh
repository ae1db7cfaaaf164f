#!/usr/bin/env bash
# Elastic resume: a run of 2 ranks stopped mid-epoch continues with 1 process (SYNCGRAD_ELASTIC=1), which stops
# mid-epoch too, and then again with 2 ranks (--elastic), each recording the samples it trained on
# (SYNCGRAD_RECORD_SAMPLES). Within the first epoch every sample is seen exactly once, besides the
# DistributedSampler's padding at the epoch's end (as many repeats as the last job's ranks need to share the
# remaining samples evenly); the next epoch is an ordinary 2-rank epoch. Without elastic mode the other world
# size is refused, naming both sizes and the flag; a single process's RandomSampler order is refused at any other
# size even with --elastic.
# PowerSGD's per-rank state cannot carry over: a warning says so.
# Usage: test_elastic_resume.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for i in $(seq 100); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
batch=4
base=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16"
  --batch-size $batch --optimizer adamw --lr 0.01 --workers 1 --log-every 100 --epochs 2 --comm-hook powersgd)
args=("${base[@]}" --checkpoint-dir "$tmp/ckpt")
export SYNCGRAD_RECORD_SAMPLES="$tmp/samples"

out=$("$launch" --nproc-per-node 2 "$train" "${args[@]}" --max-steps 3 2>&1); status=$?
check "2 ranks train 3 steps" test $status -eq 0
check "and record their samples" test -s "$tmp/samples.rank0" -a -s "$tmp/samples.rank1"

out=$(env -u SYNCGRAD_RECORD_SAMPLES "$train" "${args[@]}" --max-steps 8 --resume auto 2>&1); status=$?
check "1 process without elastic mode is refused" test $status -ne 0
check "naming both world sizes and the flag" \
  grep -q "world size 2 but this one has 1; resume with 2 processes, or pass --elastic (or set SYNCGRAD_ELASTIC=1)" \
  <<<"$out"
out=$(SYNCGRAD_ELASTIC=yes "$train" "${args[@]}" --max-steps 8 --resume auto 2>&1); status=$?
check "SYNCGRAD_ELASTIC=yes is refused, naming the value" grep -q 'SYNCGRAD_ELASTIC="yes" is neither 1' <<<"$out"

out=$(SYNCGRAD_ELASTIC=1 "$train" "${args[@]}" --max-steps 8 --resume auto 2>&1); status=$?
echo "$out" | grep -v "^step " | tail -5
check "1 process continues with SYNCGRAD_ELASTIC=1" test $status -eq 0
check "it says how the epoch continues" \
  grep -q "elastic resume: the checkpoint's 2 rank(s) consumed $((3 * batch * 2)) of epoch 1's" <<<"$out"
check "it warns that PowerSGD's per-rank state does not carry over" \
  grep -q "comm hook state of the 2 ranks that saved it is not used by a single process" <<<"$out"

out=$("$launch" --nproc-per-node 2 "$train" "${args[@]}" --resume auto --elastic 2>&1); status=$?
echo "$out" | grep -v "step " | tail -4
check "2 ranks continue with --elastic to the end of epoch 2" test $status -eq 0
check "from the global position of the 1-process job" \
  grep -q "consumed $((3 * batch * 2 + 5 * batch)) of epoch 1's" <<<"$out"

# epoch_stats epoch: "total distinct smallest largest" over every rank's recorded samples of that epoch.
epoch_stats() {
  cat "$tmp"/samples.rank* | awk -v e="$1" '$1 == e { for (i = 2; i <= NF; ++i) print $i }' | sort -n |
    awk 'NR == 1 { lo = $1 } { n++; if (!($1 in seen)) d++; seen[$1] = 1; hi = $1 } END { print n, d, lo, hi }'
}
read -r total1 distinct1 low1 high1 <<<"$(epoch_stats 1)"
samples=$distinct1
check "epoch 2 (ordinary, 2 ranks) sees samples 0..N-1" test "$low1" = 0 -a "$high1" = $((samples - 1))
check "epoch 2 repeats only the 2-rank padding" test "$total1" = $((samples + samples % 2))
read -r total0 distinct0 low0 high0 <<<"$(epoch_stats 0)"
remaining=$((samples - 3 * batch * 2 - 5 * batch))
check "epoch 1 (2 -> 1 -> 2 ranks) sees every sample" test "$distinct0" = "$samples" -a "$low0" = 0 \
  -a "$high0" = $((samples - 1))
check "exactly once, besides the last job's padding of the $remaining remaining samples" \
  test "$total0" = $((samples + remaining % 2))
echo "epoch 1: $total0 samples trained, $distinct0 distinct; epoch 2: $total1, $distinct1 distinct"

# A single process without --elastic reads a RandomSampler's order, which 2 ranks cannot continue.
unset SYNCGRAD_RECORD_SAMPLES
single=("${base[@]}" --checkpoint-dir "$tmp/single")
out=$("$train" "${single[@]}" --max-steps 2 2>&1); status=$?
check "1 process without --elastic trains 2 steps" test $status -eq 0
out=$("$launch" --nproc-per-node 2 "$train" "${single[@]}" --max-steps 4 --resume auto --elastic 2>&1); status=$?
check "2 ranks cannot continue its order, even with --elastic" test $status -ne 0
check "saying why and what to do" grep -q "saved by a single process without --elastic, whose data order" <<<"$out"
finish
