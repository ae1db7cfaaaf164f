#!/usr/bin/env bash
# What `syncgrad-train --checkpoint-every N` costs a 2-rank DDP run (syncgrad-launch, Gloo on 127.0.0.1), two ways:
#   A/B    runs without checkpoints (A: no --checkpoint-dir) and with them (B: --checkpoint-dir --checkpoint-every N,
#          which also adds the per-step preemption check) alternate A B A B ..., PAIRS pairs in one go, so that a
#          busy machine slows both alike; each run's time is its "done: S steps in T s" line (training, its saves
#          included, without data loading and the final evaluation); overhead (B - A) / A per pair.
#   direct inside the B runs, every output line is stamped as it arrives (stdbuf -oL, --log-every 1): a save's
#          time is from step K's progress line to "checkpoint saved ... (step K)", a step's time the gap between
#          two progress lines without a save between them; overhead = save / (N x step), medians.
# Usage: bench/checkpoint_overhead.sh [BUILD_DIR]   (default ./build)
# Settings (environment): MODEL=cnn STEPS=200 EVERY=100 PAIRS=3 BATCH=64 WORKERS=1 DIR=$TMPDIR-or-/tmp
set -euo pipefail
build="${1:-build}"
launch="$build/tools/syncgrad-launch"; train="$build/tools/syncgrad-train"
model="${MODEL:-cnn}" steps="${STEPS:-200}" every="${EVERY:-100}" pairs="${PAIRS:-3}" batch="${BATCH:-64}"
workers="${WORKERS:-1}"
for bin in "$launch" "$train"; do
  [ -x "$bin" ] || { echo "checkpoint_overhead.sh: $bin not found; build first (ninja -C $build)" >&2; exit 2; }
done
work=$(mktemp -d "${DIR:-${TMPDIR:-/tmp}}/checkpoint-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT

run() {  # run log extra-args...: one 2-rank run, its output stamped into log; prints its training seconds
  local log="$1"; shift
  "$launch" --nproc-per-node 2 stdbuf -oL "$train" --model "$model" --batch-size "$batch" --max-steps "$steps" \
    --log-every 1 --workers "$workers" "$@" 2>&1 | while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done >"$log"
  grep -o "done: [0-9]* steps in [0-9.]* s" "$log" | awk '{print $5}'
}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "checkpoint overhead: $model, 2 ranks (DDP over Gloo), batch $batch per rank, $steps steps, checkpoint every" \
  "$every steps (and at the end: $((steps / every)) saves), $pairs A/B pairs; $(date -u +%FT%TZ), $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %14s %14s %10s\n' pair "A: none (s)" "B: every $every (s)" overhead
overheads=()
for pair in $(seq "$pairs"); do
  a=$(run "$work/a.log")
  rm -rf "$work/ckpt"
  b=$(run "$work/b$pair.log" --checkpoint-dir "$work/ckpt" --checkpoint-every "$every")
  overhead=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", 100 * (b - a) / a }')
  overheads+=("$overhead")
  printf '%-6s %14s %14s %9s%%\n' "$pair" "$a" "$b" "$overhead"
done
echo "A/B: median overhead $(printf '%s\n' "${overheads[@]}" | median)% (target < 2%)"

# Direct: save times and step times from the stamped B runs (rank 0's lines).
cat "$work"/b*.log | awk '
  / \[rank0\]: epoch .* step [0-9]+\// { match($0, /step [0-9]+/); s = substr($0, RSTART + 5, RLENGTH - 5)
                                         if (prev != "" && !saved) print "step", $1 - prev
                                         prev = $1; at[s] = $1; saved = 0 }
  / \[rank0\]: checkpoint saved .*\(step [0-9]+\)/ { match($0, /\(step [0-9]+/); s = substr($0, RSTART + 6, RLENGTH - 6)
                                         if (s in at) print "save", $1 - at[s]; saved = 1 }' >"$work/direct"
save_ms=$(awk '$1 == "save" {print 1000 * $2}' "$work/direct" | median)
step_ms=$(awk '$1 == "step" {print 1000 * $2}' "$work/direct" | median)
bytes=$(du -sb "$work/ckpt/latest/" | awk '{print $1}')
echo "direct: a save takes $(printf %.0f "$save_ms") ms (median of $(grep -c '^save' "$work/direct")), a step" \
  "$(printf %.1f "$step_ms") ms: every $every steps costs $(awk -v s="$save_ms" -v t="$step_ms" -v n="$every" \
  'BEGIN { printf "%.2f", 100 * s / (n * t) }')% (target < 2%); one checkpoint: $((bytes / 1000)) kB"
