#!/usr/bin/env bash
# What the flight recorder (always on) and SYNCGRAD_DEBUG=detail cost a 2-rank DDP step: syncgrad-bench ddp
# (synthetic data, one thread per rank, Gloo on 127.0.0.1) under syncgrad-launch, three settings run in turns
#   A   SYNCGRAD_FLIGHT_RECORDER=0          the recorder off
#   B   (default)                           the recorder on: 2,000 entries per group, publishing to the store
#   C   SYNCGRAD_DEBUG=detail               the recorder and the per-collective fingerprint check
# as A B C A B C ..., ROUNDS rounds, so that a busy machine slows all alike; each run's figure is its ms/step
# (the median over rounds is reported, with each round's B/A and C/A).
# Usage: bench/flight_overhead.sh [BUILD_DIR]   (default ./build)
# Settings (environment): MODEL=mlp STEPS=300 ROUNDS=7 BATCH=64
set -euo pipefail
build="${1:-build}"
launch="$build/tools/syncgrad-launch"; bench="$build/bench/syncgrad-bench"
model="${MODEL:-mlp}" steps="${STEPS:-300}" rounds="${ROUNDS:-7}" batch="${BATCH:-64}"
for bin in "$launch" "$bench"; do
  [ -x "$bin" ] || { echo "flight_overhead.sh: $bin not found; build first (ninja -C $build)" >&2; exit 2; }
done

run() {  # run env-assignments...: one 2-rank run; prints its ms/step
  env "$@" "$launch" --nproc-per-node 2 "$bench" ddp --model "$model" --steps "$steps" --batch "$batch" 2>&1 |
    grep -o ' ms/step [0-9.]*' | awk '{print $2}'
}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "flight recorder overhead: $model, 2 ranks (DDP over Gloo), batch $batch per rank, $steps timed steps," \
  "$rounds rounds of A B C; $(date -u +%FT%TZ), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 |
  sed 's/^ *//')), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %12s %12s %12s %9s %9s\n' round "A off (ms)" "B on (ms)" "C detail (ms)" "B/A" "C/A"
as=(); bs=(); cs=(); ba=(); ca=()
for round in $(seq "$rounds"); do
  a=$(run SYNCGRAD_FLIGHT_RECORDER=0)
  b=$(run SYNCGRAD_FLIGHT_RECORDER=2000)
  c=$(run SYNCGRAD_DEBUG=detail)
  as+=("$a"); bs+=("$b"); cs+=("$c")
  ba+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')")
  ca+=("$(awk -v a="$a" -v c="$c" 'BEGIN { printf "%.4f", c / a }')")
  printf '%-6s %12s %12s %12s %9s %9s\n' "$round" "$a" "$b" "$c" "${ba[-1]}" "${ca[-1]}"
done
ma=$(printf '%s\n' "${as[@]}" | median); mb=$(printf '%s\n' "${bs[@]}" | median); mc=$(printf '%s\n' "${cs[@]}" | median)
echo "medians: A $ma ms, B $mb ms, C $mc ms per step; median ratio B/A $(printf '%s\n' "${ba[@]}" | median)" \
  "(recorder: $(awk -v r="$(printf '%s\n' "${ba[@]}" | median)" 'BEGIN { printf "%+.2f", 100 * (r - 1) }')%," \
  "target < 0.5%), C/A $(printf '%s\n' "${ca[@]}" | median)" \
  "(detail: $(awk -v r="$(printf '%s\n' "${ca[@]}" | median)" 'BEGIN { printf "%+.2f", 100 * (r - 1) }')%)"
