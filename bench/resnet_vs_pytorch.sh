#!/usr/bin/env bash
# ResNet training throughput (images/s) of `syncgrad-train --dataset cifar10` beside PyTorch training the
# identical architecture (bench/torch_resnet.py) with the same settings: 1 thread (SYNCGRAD_BENCH_THREADS), data prepared in the training
# thread (--workers 0), random crop + flip + normalisation, SGD lr 0.05 momentum 0.9. There is no CIFAR-10
# download here, so both read a CIFAR-10-format data set of random images written to a temporary directory
# (data_batch_1..5.bin with 400 images each, test_batch.bin with 100). The two programs alternate (A B A B ...)
# and the median ratio is quoted; each rate leaves out the first 2 steps. PyTorch: bench/peer.sh (PyTorch 2.x
# from PyPI by default, scripts/setup-peers.sh; SYNCGRAD_PEER=debian for Debian's 1.13 with OpenBLAS). With --amp bf16
# both sides train under bfloat16 autocast, and each pair also runs syncgrad in float32 (its bf16 / fp32 speed-up).
# Usage: bench/resnet_vs_pytorch.sh [--amp off|bf16] [pairs=3] [resnet20_steps=10] [resnet18_steps=6]
# Environment: SYNCGRAD_BUILD (default build) holds tools/syncgrad-train; SYNCGRAD_BENCH_THREADS=N runs both sides
# with N threads (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
amp=off
if [ "${1:-}" = --amp ]; then amp=${2:?"--amp needs off or bf16"}; shift 2; fi
case "$amp" in off|bf16) ;; *) echo "--amp: off or bf16, not '$amp'"; exit 1 ;; esac
pairs=${1:-3}; r20_steps=${2:-10}; r18_steps=${3:-6}
warmup=2
build=${SYNCGRAD_BUILD:-build}
[ -x "$build/tools/syncgrad-train" ] || { echo "build syncgrad-train first ($build/tools/syncgrad-train)"; exit 1; }
. bench/peer.sh

data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
"$peer_python" - "$data" <<'EOF'
import random, sys
rng = random.Random(0)
def write(name, n):
    with open(f"{sys.argv[1]}/{name}", "wb") as f:
        for _ in range(n):
            f.write(bytes([rng.randrange(10)]) + rng.randbytes(3072))
for i in range(1, 6):
    write(f"data_batch_{i}.bin", 400)
write("test_batch.bin", 100)
EOF

ours() {  # images/s over steps warmup+1 .. warmup+steps, from the elapsed times of the per-step CSV log
  local model=$1 batch=$2 steps=$3 mode=${4:-$amp}
  "$build/tools/syncgrad-train" --model "$model" --dataset cifar10 --data-dir "$data" --batch-size "$batch" \
      --max-steps $((warmup + steps)) --log-every 1 --threads "$threads" --workers 0 --lr-schedule constant \
      --amp "$mode" --log-file "$data/log.csv" >/dev/null
  awk -F, -v warmup="$warmup" -v last=$((warmup + steps)) -v batch="$batch" '
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    $col["kind"] == "eval" { next }
    $col["step"] == warmup { start = $col["elapsed_seconds"] }
    $col["step"] == last { printf "%.1f\n", (last - warmup) * batch / ($col["elapsed_seconds"] - start) }' \
    "$data/log.csv"
  rm -f "$data/log.csv"
}
theirs() {
  run_peer bench/torch_resnet.py "$1" "$3" "$data" "$2" "$warmup" --amp "$amp" |
    sed -n 's/samples\/s \([0-9.]*\) .*/\1/p'
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores;$cpu; $threads thread(s) each; amp $amp"
printf "%-9s %5s %5s %18s %18s %8s\n" model batch pair "syncgrad images/s" "PyTorch images/s" ratio
median() { printf "%s\n" "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for spec in "resnet20 128 $r20_steps" "resnet18 64 $r18_steps"; do
  read -r model batch steps <<<"$spec"
  ratios=(); speedups=()
  for pair in $(seq 1 "$pairs"); do
    if [ "$amp" = bf16 ]; then f32=$(ours "$model" "$batch" "$steps" off); fi
    a=$(ours "$model" "$batch" "$steps")
    b=$(theirs "$model" "$batch" "$steps")
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')
    ratios+=("$ratio")
    printf "%-9s %5s %5s %18s %18s %8s" "$model" "$batch" "$pair" "$a" "$b" "$ratio"
    if [ "$amp" = bf16 ]; then
      speedups+=("$(awk -v a="$a" -v b="$f32" 'BEGIN { printf "%.2f", a / b }')")
      printf "   syncgrad fp32 %s images/s (bf16 x%s)" "$f32" "${speedups[-1]}"
    fi
    printf "\n"
  done
  echo "$model median ratio (syncgrad / PyTorch): $(median "${ratios[@]}")"
  if [ "$amp" = bf16 ]; then echo "$model median syncgrad bf16 / fp32: $(median "${speedups[@]}")"; fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
