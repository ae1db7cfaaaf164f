#!/usr/bin/env bash
# Training throughput of syncgrad-train beside PyTorch on the same models and hyperparameters, alternating the
# two programs (A B A B ...) and quoting the median ratio. PyTorch: Debian's python3-torch 1.13 with
# libblas.so.3 pointed at OpenBLAS (libopenblas0-pthread) through LD_LIBRARY_PATH, from the cross-check venv of
# scripts/setup-crosscheck.sh. Usage: bench/train_vs_pytorch.sh [pairs=3] [mlp_steps=900] [cnn_steps=150]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}; mlp_steps=${2:-900}; cnn_steps=${3:-150}
data=${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}
python=build/crosscheck-venv/bin/python
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
[ -x "$python" ] || { echo "run scripts/setup-crosscheck.sh first"; exit 1; }
[ -e "$openblas/libblas.so.3" ] || { echo "install libopenblas0-pthread for a fair PyTorch baseline"; exit 1; }
ours() {  # samples/s and peak RSS of syncgrad-train over the given steps (its own timing excludes start-up)
  build/tools/syncgrad-train --model "$1" --max-steps "$2" --log-every 100000 --data-dir "$data" |
    sed -n 's/.* \([0-9]*\) samples\/s.*peak RSS \([0-9.]*\) MiB/\1 \2/p'
}
theirs() {
  OMP_NUM_THREADS=1 LD_LIBRARY_PATH="$openblas" "$python" bench/torch_train.py "$1" "$2" "$data" |
    sed -n 's/samples\/s \([0-9]*\) peak_rss_mib \([0-9]*\)/\1 \2/p'
}
printf "%-5s %-5s %16s %16s %8s %14s %14s\n" model pair "syncgrad samp/s" "PyTorch samp/s" ratio "syncgrad RSS" "PyTorch RSS"
for model in mlp cnn; do
  steps=$mlp_steps; [ "$model" = cnn ] && steps=$cnn_steps
  ratios=()
  for pair in $(seq 1 "$pairs"); do
    read -r a a_rss < <(ours "$model" "$steps")
    read -r b b_rss < <(theirs "$model" "$steps")
    ratio=$(python3 -c "print(f'{$a/$b:.2f}')")
    ratios+=("$ratio")
    printf "%-5s %-5s %16s %16s %8s %12s MiB %11s MiB\n" "$model" "$pair" "$a" "$b" "$ratio" "$a_rss" "$b_rss"
  done
  median=$(printf "%s\n" "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  echo "$model median ratio (syncgrad / PyTorch): $median"
done
