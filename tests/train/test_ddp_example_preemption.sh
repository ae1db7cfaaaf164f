#!/usr/bin/env bash
# examples/ddp_train.cpp (a user's own loop on distributed::TrainingState and PreemptionWatch), 2 ranks under
# syncgrad-launch: SIGTERM to the launcher mid-run saves the step both ranks finished and exits 75; run again
# with the same directory it resumes there and ends with the weights of an uninterrupted run, bit for bit.
# Skipped (77) without Fashion-MNIST. Usage: test_ddp_example_preemption.sh path/to/syncgrad-launch path/to/example
set -u
launch=$(realpath "$1"); example=$(realpath "$2")
. "$(dirname "$0")/../launch/common.sh"
data="${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}"
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then echo "skipped: no Fashion-MNIST in $data"; exit 77; fi
tmp=$(mktemp -d)
victim=""
cleanup() { if [ -n "$victim" ]; then kill -KILL "$victim" 2>/dev/null; fi; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir "$tmp/resumed" "$tmp/straight"

cd "$tmp/resumed" || exit 1
"$launch" --nproc-per-node 2 "$example" 1000000 ckpt >"$tmp/first.log" 2>&1 &
victim=$!
echo $victim >"$tmp/first.pid"
check "the example saved step 50" wait_for 120 test -f ckpt/step-000050/manifest.json
kill -TERM "$victim"
check "it ended after SIGTERM" wait_for 120 gone "$tmp/first.pid"
wait "$victim"; status=$?; victim=""
tail -3 "$tmp/first.log"
check "it exited with status 75 (preempted, resumable)" test $status -eq 75
latest=$(readlink ckpt/latest)
check "the stop step is saved, complete" test -f "ckpt/$latest/manifest.json"
stop_step=$((10#${latest#step-} + 0))
end=$((stop_step + 20))

out=$("$launch" --nproc-per-node 2 "$example" $end ckpt 2>&1); status=$?
check "run again, it finishes" test $status -eq 0
check "from the stop step" grep -q "^\[rank0\]: resumed at step $stop_step$" <<<"$out"
cd "$tmp/straight" || exit 1
out=$("$launch" --nproc-per-node 2 "$example" $end 2>&1); status=$?
check "an uninterrupted run of $end steps finishes" test $status -eq 0
check "the resumed weights equal the uninterrupted run's" \
  cmp -s "$tmp/resumed/ddp_mlp.safetensors" "$tmp/straight/ddp_mlp.safetensors"
finish
