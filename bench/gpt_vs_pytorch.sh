#!/usr/bin/env bash
# GPT training throughput (tokens/s) of syncgrad-train beside PyTorch running the identical model
# (bench/torch_gpt.py: same architecture, GPT-2 initialisation, AdamW, same text, batch and context), one
# thread each, alternating the two programs (A B A B ...) and quoting the median ratio. syncgrad's figure is
# the rate of its last progress window (steps after the first window, so start-up and first-touch costs stay
# out); PyTorch's is timed after 10 warm-up steps. PyTorch: bench/peer.sh (PyTorch 2.x from PyPI by default;
# SYNCGRAD_PEER=debian for Debian's 1.13 with OpenBLAS). SYNCGRAD_BENCH_THREADS=N: N threads each (default 1).
# Usage: bench/gpt_vs_pytorch.sh [pairs=3] [steps=40] [batch=64] [model_config=""] [text=/usr/share/games/fortunes]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}; steps=${2:-40}; batch=${3:-64}; config=${4:-}; text=${5:-/usr/share/games/fortunes}
build=${BUILD:-build}
. bench/peer.sh
[ -e "$text" ] || { echo "no text at $text: apt-get install fortunes, or pass a text file"; exit 1; }
half=$((steps / 2))
ours() {  # tokens/s of the second progress window
  OMP_NUM_THREADS="$threads" "$build/tools/syncgrad-train" --model gpt --data-dir "$text" --model-config "$config" \
    --threads "$threads" --batch-size "$batch" --optimizer adamw --lr 1e-3 --max-steps "$steps" --log-every "$half" --workers 1 |
    sed -n 's/.*  \([0-9]*\) tokens\/s .*/\1/p' | tail -n 1
}
theirs() {
  run_peer bench/torch_gpt.py train "$half" "$text" "$batch" "$config" |
    sed -n 's/tokens\/s \([0-9]*\) .*/\1/p'
}
echo "GPT ${config:-default config}, batch $batch, $threads thread(s) each; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-5s %18s %18s %8s\n" pair "syncgrad tokens/s" "PyTorch tokens/s" ratio
ratios=()
for pair in $(seq 1 "$pairs"); do
  a=$(ours); b=$(theirs)
  ratio=$(python3 -c "print(f'{$a/$b:.2f}')")
  ratios+=("$ratio")
  printf "%-5s %18s %18s %8s\n" "$pair" "$a" "$b" "$ratio"
done
median=$(printf "%s\n" "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
echo "median ratio (syncgrad / PyTorch): $median; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
