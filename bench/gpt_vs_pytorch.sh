#!/usr/bin/env bash
# GPT training throughput (tokens/s) of syncgrad-train beside PyTorch running the identical model
# (bench/torch_gpt.py: same architecture, GPT-2 initialisation, AdamW, same text, batch and context), one
# thread each, alternating the two programs (A B A B ...) and quoting the median ratio. syncgrad's figure is
# the rate of its last progress window (steps after the first window, so start-up and first-touch costs stay
# out); PyTorch's is timed after 10 warm-up steps. PyTorch: bench/peer.sh (PyTorch 2.x from PyPI by default;
# SYNCGRAD_PEER=debian for Debian's 1.13 with OpenBLAS). SYNCGRAD_BENCH_THREADS=N: N threads each (default 1).
# With --amp bf16 both sides train under bfloat16 autocast (syncgrad-train --amp bf16; torch.autocast), and
# each pair also runs syncgrad in float32 first, for the bfloat16 speed-up in the same run.
# Usage: bench/gpt_vs_pytorch.sh [--amp off|bf16] [pairs=3] [steps=40] [batch=64] [model_config=""]
#          [text=/usr/share/games/fortunes]
set -euo pipefail
cd "$(dirname "$0")/.."
amp=off
if [ "${1:-}" = --amp ]; then amp=${2:?"--amp needs off or bf16"}; shift 2; fi
case "$amp" in off|bf16) ;; *) echo "--amp: off or bf16, not '$amp'"; exit 1 ;; esac
pairs=${1:-3}; steps=${2:-40}; batch=${3:-64}; config=${4:-}; text=${5:-/usr/share/games/fortunes}
build=${BUILD:-build}
. bench/peer.sh
[ -e "$text" ] || { echo "no text at $text: apt-get install fortunes, or pass a text file"; exit 1; }
half=$((steps / 2))
ours() {  # tokens/s of the second progress window; $1: the autocast mode (default --amp's)
  OMP_NUM_THREADS="$threads" "$build/tools/syncgrad-train" --model gpt --data-dir "$text" --model-config "$config" \
    --amp "${1:-$amp}" --threads "$threads" --batch-size "$batch" --optimizer adamw --lr 1e-3 --max-steps "$steps" --log-every "$half" --workers 1 |
    sed -n 's/.*  \([0-9]*\) tokens\/s .*/\1/p' | tail -n 1
}
theirs() {
  run_peer bench/torch_gpt.py train "$half" "$text" "$batch" "$config" --amp "$amp" |
    sed -n 's/tokens\/s \([0-9]*\) .*/\1/p'
}
echo "GPT ${config:-default config}, batch $batch, $threads thread(s) each, amp $amp; load average:" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-5s %18s %18s %8s\n" pair "syncgrad tokens/s" "PyTorch tokens/s" ratio
median() { printf "%s\n" "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ratios=()
speedups=()
for pair in $(seq 1 "$pairs"); do
  if [ "$amp" = bf16 ]; then f32=$(ours off); fi
  a=$(ours); b=$(theirs)
  ratio=$(python3 -c "print(f'{$a/$b:.2f}')")
  ratios+=("$ratio")
  printf "%-5s %18s %18s %8s" "$pair" "$a" "$b" "$ratio"
  if [ "$amp" = bf16 ]; then
    speedups+=("$(python3 -c "print(f'{$a/$f32:.2f}')")")
    printf "   syncgrad fp32 %s tokens/s (bf16 x%s)" "$f32" "${speedups[-1]}"
  fi
  echo
done
echo "median ratio (syncgrad / PyTorch): $(median "${ratios[@]}"); load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$amp" = bf16 ]; then echo "median syncgrad bf16 / fp32: $(median "${speedups[@]}")"; fi
