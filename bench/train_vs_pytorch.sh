#!/usr/bin/env bash
# Training throughput of syncgrad-train beside PyTorch on the same models and hyperparameters, alternating the
# two programs (A B A B ...) and quoting the median ratio. PyTorch: bench/peer.sh (PyTorch 2.x from PyPI by
# default, scripts/setup-peers.sh; SYNCGRAD_PEER=debian for Debian's 1.13 with OpenBLAS). With --amp bf16 both
# sides train under bfloat16 autocast (syncgrad-train --amp bf16; torch.autocast('cpu', dtype=torch.bfloat16)),
# and each pair also runs syncgrad in float32 first, for the bfloat16 speed-up in the same run.
# SYNCGRAD_BUILD_DIR picks the build (default build/); SYNCGRAD_BENCH_THREADS the threads of both (default 1).
# Usage: bench/train_vs_pytorch.sh [--amp off|bf16] [pairs=3] [mlp_steps=900] [cnn_steps=150]
set -euo pipefail
cd "$(dirname "$0")/.."
amp=off
if [ "${1:-}" = --amp ]; then amp=${2:?"--amp needs off or bf16"}; shift 2; fi
case "$amp" in off|bf16) ;; *) echo "--amp: off or bf16, not '$amp'"; exit 1 ;; esac
pairs=${1:-3}; mlp_steps=${2:-900}; cnn_steps=${3:-150}
build=${SYNCGRAD_BUILD_DIR:-build}
data=${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}
. bench/peer.sh
ours() {  # samples/s and peak RSS of syncgrad-train over the given steps (its own timing excludes start-up)
  "$build"/tools/syncgrad-train --model "$1" --max-steps "$2" --log-every 100000 --data-dir "$data" --amp "${3:-$amp}" \
      --threads "$threads" |
    sed -n 's/.* \([0-9]*\) samples\/s.*peak RSS \([0-9.]*\) MiB/\1 \2/p'
}
theirs() {
  run_peer bench/torch_train.py "$1" "$2" "$data" --amp "$amp" |
    sed -n 's/samples\/s \([0-9]*\) peak_rss_mib \([0-9]*\)/\1 \2/p'
}
echo "amp $amp, $threads thread(s) each, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
printf "%-5s %-5s %16s %16s %8s %14s %14s\n" model pair "syncgrad samp/s" "PyTorch samp/s" ratio "syncgrad RSS" \
  "PyTorch RSS"
for model in mlp cnn; do
  steps=$mlp_steps; [ "$model" = cnn ] && steps=$cnn_steps
  ratios=(); speedups=()
  for pair in $(seq 1 "$pairs"); do
    if [ "$amp" = bf16 ]; then read -r f32 f32_rss < <(ours "$model" "$steps" off); fi
    read -r a a_rss < <(ours "$model" "$steps")
    read -r b b_rss < <(theirs "$model" "$steps")
    ratio=$(python3 -c "print(f'{$a/$b:.2f}')")
    ratios+=("$ratio")
    printf "%-5s %-5s %16s %16s %8s %12s MiB %11s MiB" "$model" "$pair" "$a" "$b" "$ratio" "$a_rss" "$b_rss"
    if [ "$amp" = bf16 ]; then
      speedups+=("$(python3 -c "print(f'{$a/$f32:.2f}')")")
      printf "   syncgrad fp32 %s samp/s (bf16 x%s)" "$f32" "${speedups[-1]}"
    fi
    printf "\n"
  done
  median() { printf "%s\n" "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  echo "$model median ratio (syncgrad / PyTorch): $(median "${ratios[@]}")"
  if [ "$amp" = bf16 ]; then echo "$model median syncgrad bf16 / fp32: $(median "${speedups[@]}")"; fi
done
