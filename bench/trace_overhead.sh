#!/usr/bin/env bash
# What `syncgrad-train --trace` costs a 2-rank DDP run (syncgrad-launch, Gloo on 127.0.0.1): runs without a
# trace (A) and with one recording every step (B: --trace, autograd nodes of at least 50 us) alternate
# A B, B A, A B, ... (PAIRS pairs in one go), so that a busy machine slows both alike and neither always runs
# first. A run's time per step comes from its "done: S steps in T s, R samples/s" line (training without the
# start-up, the final evaluation and the trace's gathering and writing after training): 2 x batch / R ms. The
# overhead is (B - A) / A per pair; the medians of A and B and the pairs' spread are printed.
# Usage: bench/trace_overhead.sh [BUILD_DIR]   (default ./build)
# Settings (environment): MODEL=mlp STEPS=300 PAIRS=6 BATCH=64 WORKERS=1 DIR=$TMPDIR-or-/tmp
set -euo pipefail
build="${1:-build}"
launch="$build/tools/syncgrad-launch"; train="$build/tools/syncgrad-train"
model="${MODEL:-mlp}" steps="${STEPS:-300}" pairs="${PAIRS:-6}" batch="${BATCH:-64}" workers="${WORKERS:-1}"
for bin in "$launch" "$train"; do
  [ -x "$bin" ] || { echo "trace_overhead.sh: $bin not found; build first (ninja -C $build)" >&2; exit 2; }
done
work=$(mktemp -d "${DIR:-${TMPDIR:-/tmp}}/trace-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT

run() {  # run LABEL extra-args...: one 2-rank run, its output in $work/LABEL.log; prints its milliseconds per step
  local label="$1"; shift
  # From the samples/s of the "done:" line (the whole training time over the samples of both ranks): finer than
  # its seconds, which are rounded to 0.1 s.
  "$launch" --nproc-per-node 2 "$train" --model "$model" --batch-size "$batch" --max-steps "$steps" \
    --log-every 100 --workers "$workers" "$@" 2>&1 | tee "$work/$label.log" |
    grep -o "done: [0-9]* steps in [0-9.]* s, [0-9]* samples/s" |
    awk -v batch="$batch" '{printf "%.3f\n", 1000 * 2 * batch / $7}'
}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "trace overhead: $model, 2 ranks (DDP over Gloo), batch $batch per rank, $steps steps, $pairs A/B pairs;" \
  "$(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load" \
  "average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %16s %16s %10s\n' pair "A: off (ms/step)" "B: on (ms/step)" overhead
as=(); bs=(); overheads=()
for pair in $(seq "$pairs"); do
  if [ $((pair % 2)) -eq 1 ]; then  # A B, then B A: neither always runs first
    a=$(run a); b=$(run b --trace "$work/trace.json")
  else
    b=$(run b --trace "$work/trace.json"); a=$(run a)
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
  "$(grep -o 'trace: wrote .*' "$work/b.log")"
