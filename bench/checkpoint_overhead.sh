#!/usr/bin/env bash
# What `syncgrad-train --checkpoint-every N` costs a 2-rank DDP run (syncgrad-launch, Gloo on 127.0.0.1):
# runs without checkpoints (A: no --checkpoint-dir) and with them (B: --checkpoint-dir --checkpoint-every N,
# which also adds the per-step preemption check) alternate A B A B ..., PAIRS pairs in one go, so that a busy
# machine slows both alike. Each run's time is its "done: S steps in T s" line (training, its saves included,
# without data loading and the final evaluation). Prints each pair and the median overhead (B - A) / A.
# Usage: bench/checkpoint_overhead.sh [BUILD_DIR]   (default ./build)
# Settings (environment): MODEL=cnn STEPS=300 EVERY=100 PAIRS=3 BATCH=64 WORKERS=1 DIR=$TMPDIR-or-/tmp
set -euo pipefail
build="${1:-build}"
launch="$build/tools/syncgrad-launch"; train="$build/tools/syncgrad-train"
model="${MODEL:-cnn}" steps="${STEPS:-300}" every="${EVERY:-100}" pairs="${PAIRS:-3}" batch="${BATCH:-64}"
workers="${WORKERS:-1}"
for bin in "$launch" "$train"; do
  [ -x "$bin" ] || { echo "checkpoint_overhead.sh: $bin not found; build first (ninja -C $build)" >&2; exit 2; }
done
work=$(mktemp -d "${DIR:-${TMPDIR:-/tmp}}/checkpoint-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT

run_seconds() {  # run_seconds extra-args...: the training seconds of one 2-rank run
  local out
  out=$("$launch" --nproc-per-node 2 "$train" --model "$model" --batch-size "$batch" --max-steps "$steps" \
    --log-every "$steps" --workers "$workers" "$@" 2>&1) || { echo "$out" >&2; return 1; }
  grep -o "done: [0-9]* steps in [0-9.]* s" <<<"$out" | awk '{print $5}'
}

echo "checkpoint overhead: $model, 2 ranks (DDP over Gloo), batch $batch per rank, $steps steps, checkpoint every" \
  "$every steps (and at the end: $((steps / every)) saves), $pairs A/B pairs; $(date -u +%FT%TZ), $(nproc) cores"
printf '%-6s %14s %14s %10s\n' pair "A: none (s)" "B: every $every (s)" overhead
overheads=()
for pair in $(seq "$pairs"); do
  a=$(run_seconds)
  rm -rf "$work/ckpt"
  b=$(run_seconds --checkpoint-dir "$work/ckpt" --checkpoint-every "$every")
  overhead=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", 100 * (b - a) / a }')
  overheads+=("$overhead")
  printf '%-6s %14s %14s %9s%%\n' "$pair" "$a" "$b" "$overhead"
done
bytes=$(du -sb "$work/ckpt/latest/" | awk '{print $1}')
median=$(printf '%s\n' "${overheads[@]}" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
echo "median overhead: $median% (target < 2%); one checkpoint: $((bytes / 1000)) kB"
