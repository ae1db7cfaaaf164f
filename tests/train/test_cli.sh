#!/usr/bin/env bash
# syncgrad-train's command line: --help explains every flag; bad flags and values fail with a message and a
# non-zero status; the log file gets rows. Usage: test_cli.sh path/to/syncgrad-train
set -u
bin="$1"
. "$(dirname "$0")/../check.sh"
help=$("$bin" --help)
for flag in --model --data-dir --epochs --batch-size --lr --optimizer --momentum --weight-decay --seed --threads \
            --checkpoint-dir --resume --init-from --no-shuffle --max-steps --log-file; do
  check "--help mentions $flag" grep -q -- "$flag" <<<"$help"
done
out=$("$bin" --model resnet 2>&1); status=$?
check "unknown model fails" test $status -ne 0
check "unknown model is named" grep -q "resnet" <<<"$out"
out=$("$bin" --bogus-flag 2>&1); status=$?
check "unknown flag fails" test $status -ne 0
check "unknown flag is named" grep -q -- "--bogus-flag" <<<"$out"
out=$("$bin" --batch-size -3 2>&1); status=$?
check "negative batch size fails" test $status -ne 0
for bad in nan 1e30 0 -1; do
  out=$("$bin" --bucket-cap-mb "$bad" 2>&1); status=$?
  check "--bucket-cap-mb $bad fails, naming the value and the range" \
    grep -q -- "--bucket-cap-mb: $bad is not a number of MiB above 0 and at most 1048576" <<<"$out"
  check "--bucket-cap-mb $bad: non-zero status" test $status -ne 0
done
out=$("$bin" --threads 100000 2>&1); status=$?
check "--threads 100000 fails with the allowed range" grep -qE -- "--threads: 100000 is out of range: use 1 to [0-9]+" <<<"$out"
check "--threads 100000: non-zero status" test $status -ne 0
if [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || [ -n "${SYNCGRAD_DATA_DIR:-}" ]; then
  log=$(mktemp --suffix=.jsonl)
  out=$("$bin" --model mlp --max-steps 20 --log-every 10 --log-file "$log" 2>&1); status=$?
  check "short run succeeds" test $status -eq 0
  check "short run prints test accuracy" grep -q "test accuracy" <<<"$out"
  check "jsonl log has 2 train rows and the final eval row" test "$(wc -l <"$log")" -eq 3
  rm -f "$log"
else
  echo "skipped: short run (Fashion-MNIST not installed)"
fi
if [ $failures -eq 0 ]; then exit 0; else exit 1; fi
