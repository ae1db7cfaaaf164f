#!/usr/bin/env bash
# What `syncgrad-train --trace` costs a 2-rank DDP run (syncgrad-launch, Gloo on 127.0.0.1): runs without a
# trace (A) and with one recording every step (B: --trace, autograd nodes of at least 50 us) alternate
# A B B A A B ..., PAIRS pairs in one go, so that a busy machine slows both alike and neither always runs first. Each run's time per step is its
# "done: S steps in T s" line (training without start-up and the final evaluation) divided by S; the overhead is
# (B - A) / A per pair, and the medians of A and B. The run with --trace also pays the trace's gathering and
# writing after training, outside that time; the script prints how long the file took to appear.
# Usage: bench/trace_overhead.sh [BUILD_DIR]   (default ./build)
# Settings (environment): MODEL=mlp STEPS=300 PAIRS=5 BATCH=64 WORKERS=1 DIR=$TMPDIR-or-/tmp
set -euo pipefail
build="${1:-build}"
launch="$build/tools/syncgrad-launch"; train="$build/tools/syncgrad-train"
model="${MODEL:-mlp}" steps="${STEPS:-300}" pairs="${PAIRS:-5}" batch="${BATCH:-64}" workers="${WORKERS:-1}"
for bin in "$launch" "$train"; do
  [ -x "$bin" ] || { echo "trace_overhead.sh: $bin not found; build first (ninja -C $build)" >&2; exit 2; }
done
work=$(mktemp -d "${DIR:-${TMPDIR:-/tmp}}/trace-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT

run() {  # run extra-args...: one 2-rank run; prints its milliseconds per step
  "$launch" --nproc-per-node 2 "$train" --model "$model" --batch-size "$batch" --max-steps "$steps" \
    --log-every 100 --workers "$workers" "$@" 2>&1 | tee "$work/last.log" |
    grep -o "done: [0-9]* steps in [0-9.]* s" | awk '{printf "%.3f\n", 1000 * $5 / $2}'
}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "trace overhead: $model, 2 ranks (DDP over Gloo), batch $batch per rank, $steps steps, $pairs A/B pairs;" \
  "$(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load" \
  "average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %16s %16s %10s\n' pair "A: off (ms/step)" "B: on (ms/step)" overhead
as=(); bs=(); overheads=()
for pair in $(seq "$pairs"); do
  if [ $((pair % 2)) -eq 1 ]; then  # A B, then B A: neither always runs first
    a=$(run); b=$(run --trace "$work/trace.json")
  else
    b=$(run --trace "$work/trace.json"); a=$(run)
  fi
  overhead=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", 100 * (b - a) / a }')
  as+=("$a"); bs+=("$b"); overheads+=("$overhead")
  printf '%-6s %16s %16s %9s%%\n' "$pair" "$a" "$b" "$overhead"
done
events=$(grep -o '"ph":"X"' "$work/trace.json" | wc -l)
echo "medians: off $(printf '%s\n' "${as[@]}" | median) ms/step, on $(printf '%s\n' "${bs[@]}" | median) ms/step;" \
  "median overhead $(printf '%s\n' "${overheads[@]}" | median)% (spread of the pairs: $(printf '%s\n' \
  "${overheads[@]}" | sort -g | head -1)% to $(printf '%s\n' "${overheads[@]}" | sort -g | tail -1)%)"
echo "the trace: $events spans, $(du -k "$work/trace.json" | cut -f1) KiB for $steps steps of 2 ranks;" \
  "$(grep -o 'trace: wrote .*' "$work/last.log")"
