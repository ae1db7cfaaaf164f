#!/usr/bin/env bash
# How far one epoch's test accuracy moves between seeds, per model and --amp mode, on this CPU: the spread the
# trainer tests derive their thresholds from (tests/train/accuracy_margins.h). For each model it trains one
# epoch per (mode, seed), prints every accuracy, then per mode the mean, the sample standard deviation and the
# range, and per low-precision mode the paired difference to float32 (same seed): mean, standard deviation and
# the worst seed. SYNCGRAD_BUILD_DIR picks the build (default build/); extra arguments go to every run (e.g.
# --threads 1). Run it on each kind of CPU (lscpu's model name and the flags it prints head the output).
# Usage: bench/seed_spread.sh [seeds=5] [models=mlp,cnn] [modes=off,bf16,fp16] [syncgrad-train options...]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-5}; models=${2:-mlp,cnn}; modes=${3:-off,bf16,fp16}
shift $(($# < 3 ? $# : 3))
build=${SYNCGRAD_BUILD_DIR:-build}
train="$build/tools/syncgrad-train"
[ -x "$train" ] || { echo "seed_spread: no $train; build first (scripts/setup.sh)"; exit 1; }
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "seed_spread: seeds must be a positive integer, not '$seeds'"; exit 1; }

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'); flags: $(grep -o 'amx_[a-z0-9]*\|avx512_bf16\|avx512_fp16' \
  /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), seeds 0..$((seeds - 1)), extra options: ${*:-none}"

# accuracy MODEL MODE SEED: the test accuracy (percent) after one epoch.
accuracy() {
  local out
  out=$("$train" --model "$1" --amp "$2" --seed "$3" --log-every 100000 "${@:4}" 2>&1) ||
    { echo "seed_spread: run failed: --model $1 --amp $2 --seed $3" >&2; echo "$out" | tail -3 >&2; exit 1; }
  sed -n 's/^done: .* test accuracy \([0-9.]*\)%.*/\1/p' <<<"$out"
}

# stats VALUES...: "mean sd min max" of the arguments (sample standard deviation; 0 for one value).
stats() {
  printf "%s\n" "$@" | awk '{x[NR] = $1; s += $1} END {
    m = s / NR; v = 0; lo = x[1]; hi = x[1]
    for (i = 1; i <= NR; i++) { v += (x[i] - m) ^ 2; if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
    printf "%.3f %.3f %.2f %.2f\n", m, (NR > 1 ? sqrt(v / (NR - 1)) : 0), lo, hi }'
}

IFS=, read -r -a model_list <<<"$models"
IFS=, read -r -a mode_list <<<"$modes"
for model in "${model_list[@]}"; do
  declare -A acc=()
  for mode in "${mode_list[@]}"; do
    for seed in $(seq 0 $((seeds - 1))); do
      acc[$mode,$seed]=$(accuracy "$model" "$mode" "$seed" "$@")
      echo "$model --amp $mode --seed $seed: ${acc[$mode,$seed]}%"
    done
  done
  printf "\n%-5s %-5s %8s %7s %7s %7s   %s\n" model mode mean sd min max "vs off, same seed: mean sd worst"
  for mode in "${mode_list[@]}"; do
    values=(); diffs=()
    for seed in $(seq 0 $((seeds - 1))); do
      values+=("${acc[$mode,$seed]}")
      [ -n "${acc[off,$seed]:-}" ] && diffs+=("$(awk -v a="${acc[$mode,$seed]}" -v b="${acc[off,$seed]}" \
        'BEGIN {printf "%.2f", a - b}')")
    done
    read -r mean sd lo hi < <(stats "${values[@]}")
    paired="-"
    if [ "$mode" != off ] && [ ${#diffs[@]} -gt 0 ]; then
      read -r dmean dsd dlo _ < <(stats "${diffs[@]}")
      paired="$dmean $dsd $dlo"
    fi
    printf "%-5s %-5s %8s %7s %7s %7s   %s\n" "$model" "$mode" "$mean" "$sd" "$lo" "$hi" "$paired"
  done
  echo
  unset acc
done
