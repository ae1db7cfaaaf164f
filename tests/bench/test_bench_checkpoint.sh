#!/usr/bin/env bash
# syncgrad-bench checkpoint, quickly: a one-rep run on a small GPT and ResNet-20 prints its header, one row per
# model with every column a number (sizes and speeds, not asserted), the disk table, and leaves nothing behind
# in --dir; bad --models, --reps and --dir values are refused naming them.
# Usage: test_bench_checkpoint.sh path/to/syncgrad-bench
set -u
bin="$1"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

out=$("$bin" checkpoint --dir "$tmp" --models gpt,resnet20 --model-config n_layer=1,n_head=2,n_embd=32 --reps 1 2>&1)
status=$?
echo "$out"
check "a quick run exits 0" test $status -eq 0
check "it prints its header" grep -q "^syncgrad-bench checkpoint: $tmp, median of 1" <<<"$out"
check "it prints the table's columns" grep -qE \
  "^model +optimizer +Mparams +ckpt MB +save s +save MB/s +disk wr +save/disk +load s +load MB/s +cold s +cold MB/s$" \
  <<<"$out"
number='[0-9]+(\.[0-9]+)?'
check "a GPT row (AdamW) with a number in every column" grep -qE \
  "^gpt \(n_layer=1,n_head=2,n_embd=32\) +AdamW( +$number){5} +$number% +$number +$number +$number +$number$" <<<"$out"
check "a ResNet-20 row (SGD with momentum)" grep -qE \
  "^resnet20 +SGD\+momentum( +$number){5} +$number% +$number +$number +$number +$number$" <<<"$out"
check "the disk table, one line per model" test "$(grep -cE "^[0-9]+ MB file, 4 MiB blocks, fsync +$number +$number$" \
  <<<"$out")" -eq 2
check "nothing is left in --dir" test -z "$(ls -A "$tmp")"

fails() {  # fails "fragment" args...: exits non-zero and says fragment
  local fragment="$1"; shift
  local text; text=$("$bin" checkpoint "$@" 2>&1) && { echo "  exited 0"; return 1; }
  grep -qF -- "$fragment" <<<"$text" || { echo "  '$fragment' not in: $text"; return 1; }
}
check "an unknown model is refused, naming it" fails 'unknown model "vgg"' --models gpt,vgg --dir "$tmp"
check "--reps 0 is refused" fails "--reps" --reps 0
check "a bad --model-config is refused, naming it" fails "n_layer=0 must be >= 1" --models gpt --model-config n_layer=0 \
  --dir "$tmp"
check "a --dir that does not exist is refused, naming it" fails "$tmp/none is not a directory" --dir "$tmp/none"
finish
