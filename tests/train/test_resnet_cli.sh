#!/usr/bin/env bash
# syncgrad-train --dataset cifar10 with the ResNets on small CIFAR-10-format files written here (5 train files of
# 64 images, a test file of 32; each image's colour depends on its label, so a few steps learn something):
# resnet20 trains and its loss falls; resnet18 runs; --amp bf16 / fp16 run; 4 steps + checkpoint + --resume + 4
# steps equals 8 steps
# (model.safetensors byte for byte); missing data gives an error saying where to get it and what the files
# are called; 2 ranks under syncgrad-launch train with --sync-batch-norm.
# Usage: test_resnet_cli.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
data="$tmp/cifar"; mkdir -p "$data"
write_cifar() {  # write_cifar FILE RECORDS SEED: label r % 10, channel c of image r near (label * 23 + c * 61) % 256
  LC_ALL=C awk -v n="$2" -v seed="$3" 'BEGIN {
    for (r = 0; r < n; ++r) {
      label = (r + seed) % 10; printf "%c", label
      for (c = 0; c < 3; ++c) for (p = 0; p < 1024; ++p) printf "%c", (label * 23 + c * 61 + (p * 7 + r * 3) % 24) % 256
    }
  }' >"$1"
}
for i in 1 2 3 4 5; do write_cifar "$data/data_batch_$i.bin" 64 "$i"; done
write_cifar "$data/test_batch.bin" 32 0
run() { "$train" --dataset cifar10 --data-dir "$data" --workers 0 --threads 1 "$@"; }

out=$(run --model resnet20 --batch-size 32 --max-steps 10 --log-every 1 2>&1); status=$?
echo "$out" | tail -2
check "resnet20 trains on CIFAR-10 files" test $status -eq 0
losses=$(sed -n 's/.*step \([0-9]*\)\/10  loss \([0-9.]*\).*/\2/p' <<<"$out")
first=$(head -3 <<<"$losses" | awk '{s += $1} END {print s / NR}')
last=$(tail -3 <<<"$losses" | awk '{s += $1} END {print s / NR}')
check "its loss falls (first 3 steps $first, last 3 $last)" awk -v a="$first" -v b="$last" 'BEGIN {exit !(b < 0.8 * a)}'
check "it reports the test accuracy" grep -q "test accuracy" <<<"$out"

out=$(run --model resnet18 --batch-size 8 --max-steps 2 --log-every 1 2>&1); status=$?
check "resnet18 trains a few steps" test $status -eq 0
check "resnet18 reports its steps" grep -q "done: 2 steps" <<<"$out"

for amp in bf16 fp16; do
  out=$(run --model resnet20 --batch-size 16 --max-steps 3 --amp "$amp" 2>&1); status=$?
  check "resnet20 trains with --amp $amp" test $status -eq 0
  check "its loss stays finite with --amp $amp" grep -q "done: 3 steps" <<<"$out"
done

run --model resnet20 --batch-size 16 --max-steps 4 --checkpoint-dir "$tmp/a" >/dev/null 2>&1
out=$(run --model resnet20 --batch-size 16 --max-steps 8 --checkpoint-dir "$tmp/a" --resume "$tmp/a" 2>&1); status=$?
check "resumed run succeeds" test $status -eq 0
check "it says where it resumed" grep -q "resumed from .* step 4" <<<"$out"
run --model resnet20 --batch-size 16 --max-steps 8 --checkpoint-dir "$tmp/b" >/dev/null 2>&1
check "4 + resume + 4 steps gives the weights and statistics of 8 steps" \
  cmp -s "$tmp/a/latest/model.safetensors" "$tmp/b/latest/model.safetensors"

out=$(env -u SYNCGRAD_CIFAR10_DIR "$train" --model resnet20 --max-steps 1 2>&1); status=$?
check "without --data-dir the run fails" test $status -ne 0
check "the error says where to get CIFAR-10" \
  grep -q "cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html" <<<"$out"
mkdir -p "$tmp/empty"
out=$("$train" --model resnet20 --dataset cifar10 --data-dir "$tmp/empty" --max-steps 1 2>&1); status=$?
check "an empty --data-dir fails" test $status -ne 0
check "the error names the files it expects" grep -q "data_batch_1.bin" <<<"$out"

out=$("$launch" --nproc-per-node 2 "$train" --model resnet20 --dataset cifar10 --data-dir "$data" --workers 0 \
      --batch-size 16 --max-steps 3 --log-every 1 --sync-batch-norm 2>&1); status=$?
echo "$out" | tail -2
check "2 ranks train resnet20 with --sync-batch-norm" test $status -eq 0
check "rank 0 reports the result" grep -q '^\[rank0\]: done: 3 steps' <<<"$out"
if [ $failures -eq 0 ]; then exit 0; else exit 1; fi
