#!/usr/bin/env bash
# syncgrad-train --amp bf16 / fp16 under syncgrad-launch with 2 ranks (DDP over gloo on 127.0.0.1): one epoch of
# the MLP and the CNN per mode (seed 0, the trainer's default cosine schedule); no mode may be worse than
# float32 by more than the margin derived from the measured seed-to-seed spread (tests/train/accuracy_margins.h,
# read from there); better is never a failure. The progress line carries the amp fields on rank 0. About 3 CNN
# epochs on two cores.
# Usage: test_amp_ddp.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../check.sh"
require_fashion_mnist
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
margins="$(dirname "$0")/accuracy_margins.h"
# margin MODEL: how many points worse than float32 a mode may be (3 sqrt(2) x the seed sd, as amp_margin_points).
margin() {
  local name=kMlpSeedSdPoints
  [ "$1" = cnn ] && name=kCnnSeedSdPoints
  sed -n "s/.*double $name = \([0-9.]*\);.*/\1/p" "$margins" | awk '{printf "%.3f", 3 * sqrt(2) * $1}'
}

# accuracy MODEL AMP SEED: the test accuracy (percent) of one 2-rank epoch; the run's output is kept in $tmp.
accuracy() {
  local log="$tmp/$1-$2-$3.log"
  "$launch" --nproc-per-node 2 "$train" --model "$1" --amp "$2" --seed "$3" --workers 1 --log-every 200 >"$log" 2>&1 ||
    { echo "run failed: $1 --amp $2 --seed $3" >&2; tail -5 "$log" >&2; echo nan; return; }
  sed -n 's/^\[rank0\]: done: .* test accuracy \([0-9.]*\)%.*/\1/p' "$log"
}

for spec in mlp:1 cnn:1; do
  model=${spec%:*}; seeds=${spec#*:}
  declare -A mean=()
  for amp in off bf16 fp16; do
    values=()
    for seed in $(seq 0 $((seeds - 1))); do values+=("$(accuracy "$model" "$amp" "$seed")"); done
    mean[$amp]=$(printf "%s\n" "${values[@]}" | awk '{s += $1} END {printf "%.3f", s / NR}')
    echo "$model --amp $amp, 2 ranks: ${values[*]} (mean ${mean[$amp]}%)"
  done
  allowed=$(margin "$model")
  for amp in bf16 fp16; do
    check "$model --amp $amp under DDP is at most $allowed points worse than float32 (${mean[$amp]} vs ${mean[off]})" \
      awk -v a="${mean[$amp]}" -v b="${mean[off]}" -v m="$allowed" 'BEGIN {exit !(m > 0 && a >= b - m)}'
  done
  unset mean
done
check "rank 0's progress line shows the loss scale and skipped steps" \
  grep -q '^\[rank0\]: epoch .* amp fp16 scale [0-9]* skipped [0-9]*' "$tmp/mlp-fp16-0.log"
check "rank 1 prints no progress" test "$(grep -c '^\[rank1\]: epoch' "$tmp/mlp-fp16-0.log")" -eq 0
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
