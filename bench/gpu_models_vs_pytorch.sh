#!/usr/bin/env bash
# Training throughput of the bundled models on one GPU beside PyTorch on the same GPU: the CNN (Fashion-MNIST),
# ResNet-20 and ResNet-18 (CIFAR-10 format) and the GPT (byte-level text), each trained by
# `syncgrad-train --device cuda` and by its PyTorch peer (bench/torch_train.py, torch_resnet.py, torch_gpt.py
# --device cuda) with the same model, batch, optimizer, learning rate and data, alternating the two programs
# (A B A B ..., `pairs` pairs per model, the models taken in turn in each round of pairs) and quoting the
# median ratio. Target: ratio >= 1.
#
# What is timed: only training steps. Both sides train W warm-up steps untimed, then N timed ones; start-up,
# data loading, the warm-up (cuBLAS/cuDNN handles, allocator growth) and the final evaluation stay out.
# syncgrad's rate comes from its per-step CSV log (--log-every W: the elapsed time at steps W and W+N, each
# taken right after the loss was read, so the device has caught up); PyTorch's peers synchronise the device at
# both ends. Both sides compute float32 without TF32 and leave cuDNN to its heuristic algorithm choice
# (syncgrad's default; the peers switch PyTorch's cuDNN TF32 off). syncgrad prepares batches in its loader
# threads (--workers 2; the "data-wait" column says whether training waited for them), the peers in the
# training thread while the device runs the previous step. Data: Fashion-MNIST from $SYNCGRAD_DATA_DIR or
# /usr/share/datasets/fashion-mnist when installed, else a random data set in its format; random images in
# CIFAR-10 format (10,000 training, 100 test); the GPT reads this repository's sources and docs as text.
#
# Usage: bench/gpu_models_vs_pytorch.sh [--device cuda|cpu] [--budget SECONDS] [--models "cnn resnet20 ..."]
#                                      [pairs=3]
#   --device cpu   the same plumbing on the CPU with tiny step counts and batches (1 thread each side; the
#                  PyTorch peer is Debian's torch with OpenBLAS from build/crosscheck-venv when present)
#   --budget S     start no pair that would end after S seconds from the script's start (0: no limit); the
#                  medians then cover the pairs that ran
# Exit status: 0 with the table, or when there is no CUDA device or no PyTorch with CUDA (it says why);
# 1 when a run fails; 2 on bad arguments.
# Environment: SYNCGRAD_BUILD (default build) holds tools/syncgrad-train; SYNCGRAD_TORCH_PYTHON the Python
# with torch (default: the first of python3 and /usr/bin/python3 whose torch sees a CUDA device; with --device
# cpu build/crosscheck-venv/bin/python first).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

device=cuda
budget=0
models="cnn resnet20 resnet18 gpt"
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=${2:-}; shift 2 ;;
    --budget) budget=${2:-}; shift 2 ;;
    --models) models=${2:-}; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)"; exit 2 ;;
    *) break ;;
  esac
done
pairs=${1:-3}
case "$device" in cuda|cpu) ;; *) echo "--device: cuda or cpu, not '$device'"; exit 2 ;; esac
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "--budget: whole seconds, not '$budget'"; exit 2; }
[[ "$pairs" =~ ^[1-9][0-9]*$ ]] || { echo "pairs: a positive number, not '$pairs'"; exit 2; }
for m in $models; do
  case "$m" in cnn|resnet20|resnet18|gpt) ;; *) echo "--models: cnn resnet20 resnet18 gpt, not '$m'"; exit 2 ;; esac
done

# Per model and device: batch, warm-up steps W, timed steps N.
if [ "$device" = cuda ]; then
  declare -A spec=([cnn]="128 10 400" [resnet20]="128 10 150" [resnet18]="128 10 100" [gpt]="64 10 150")
else
  declare -A spec=([cnn]="64 2 4" [resnet20]="16 1 2" [resnet18]="8 1 2" [gpt]="8 2 4")
fi

build=${SYNCGRAD_BUILD:-build}
train="$build/tools/syncgrad-train"
[ -x "$train" ] || { echo "build syncgrad-train first ($train; SYNCGRAD_BUILD picks the build)"; exit 1; }

# ---- the PyTorch peer's Python
peer_env=()
if [ "$device" = cpu ]; then
  peer_env=(OMP_NUM_THREADS=1)
  openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
  [ -e "$openblas/libblas.so.3" ] && peer_env+=(LD_LIBRARY_PATH="$openblas")
fi
probe() {  # probe PYTHON: one line about its torch; status 0 when it can run the peers on $device
  env "${peer_env[@]}" "$1" - "$device" 2>/dev/null <<'EOF'
import sys
try:
    import torch
except ImportError:
    print("no torch"); sys.exit(1)
try:
    import numpy  # noqa: F401  (the peers' data readers)
except ImportError:
    print(f"PyTorch {torch.__version__} but no numpy"); sys.exit(1)
if sys.argv[1] == "cpu":
    print(f"PyTorch {torch.__version__} on the CPU"); sys.exit(0)
if not torch.cuda.is_available():
    print(f"PyTorch {torch.__version__} (CUDA build {torch.version.cuda}) sees no CUDA device"); sys.exit(1)
print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}) "
      f"on {torch.cuda.get_device_name(0)}")
EOF
}
if [ -n "${SYNCGRAD_TORCH_PYTHON:-}" ]; then
  candidates=("$SYNCGRAD_TORCH_PYTHON")
elif [ "$device" = cpu ]; then
  candidates=(build/peer-venv/bin/python build/crosscheck-venv/bin/python python3 /usr/bin/python3)
else
  candidates=(build/peer-venv/bin/python python3 /usr/bin/python3)
fi
python=""
reasons=()
for candidate in "${candidates[@]}"; do
  command -v "$candidate" >/dev/null 2>&1 || { reasons+=("$candidate: not found"); continue; }
  if about=$(probe "$candidate"); then python=$candidate; break; fi
  reasons+=("$candidate: ${about:-no answer}")
done
if [ -z "$python" ]; then
  echo "skipped: no PyTorch that can run on $device ($(printf '%s; ' "${reasons[@]}")set SYNCGRAD_TORCH_PYTHON to another Python)"
  exit 0
fi

# ---- data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fashion=${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}
fashion_about="Fashion-MNIST ($fashion)"
if ! ls "$fashion"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  fashion="$work/fashion"
  fashion_about="random images in Fashion-MNIST format (Fashion-MNIST is not installed)"
fi
if ! "$python" - "$work" "$fashion" <<'EOF'
import gzip, os, random, struct, sys
work, fashion = sys.argv[1], sys.argv[2]
rng = random.Random(0)
os.makedirs(f"{work}/cifar10")
for name, count in [(f"data_batch_{i}.bin", 2000) for i in range(1, 6)] + [("test_batch.bin", 100)]:
    with open(f"{work}/cifar10/{name}", "wb") as f:
        for _ in range(count):
            f.write(bytes([rng.randrange(10)]) + rng.randbytes(3072))
if fashion == f"{work}/fashion":
    os.makedirs(fashion)
    for split, count in (("train", 10000), ("t10k", 1000)):
        with gzip.open(f"{fashion}/{split}-images-idx3-ubyte.gz", "wb", compresslevel=1) as f:
            f.write(struct.pack(">IIII", 0x803, count, 28, 28) + rng.randbytes(count * 784))
        with gzip.open(f"{fashion}/{split}-labels-idx1-ubyte.gz", "wb", compresslevel=1) as f:
            f.write(struct.pack(">II", 0x801, count) + bytes(rng.randrange(10) for _ in range(count)))
EOF
then
  echo "could not write the data sets into $work"
  exit 1
fi
find docs tensor autograd nn optim data distributed models tools examples tests bench -type f \
  \( -name '*.md' -o -name '*.h' -o -name '*.cpp' -o -name '*.cu' \) 2>/dev/null | LC_ALL=C sort |
  xargs cat >"$work/text.txt"

# ---- one run of each side; both print "RATE DATA_WAIT PEAK_MIB" ("-" where a figure does not exist)
ours() {  # ours MODEL BATCH WARMUP STEPS
  local model=$1 batch=$2 warmup=$3 steps=$4 args
  case "$model" in
    cnn) args=(--data-dir "$fashion") ;;
    resnet*) args=(--dataset cifar10 --data-dir "$work/cifar10") ;;
    gpt) args=(--data-dir "$work/text.txt" --optimizer adamw --lr 1e-3) ;;
  esac
  rm -f "$work/log.csv"
  if ! "$train" --device "$device" --model "$model" "${args[@]}" --batch-size "$batch" --epochs 1000 \
      --max-steps $((warmup + steps)) --log-every "$warmup" --lr-schedule constant --log-file "$work/log.csv" \
      >"$work/ours.out" 2>&1; then
    echo "syncgrad-train --device $device --model $model failed:" >&2
    tail -n 5 "$work/ours.out" >&2
    return 1
  fi
  local units=1 peak
  [ "$model" = gpt ] && units=$(sed -n 's/.*block_size=\([0-9]*\).*/\1/p' "$work/ours.out" | head -n 1)
  peak=$(sed -En 's/.*peak (tensor|cuda:[0-9]+) memory ([0-9.]+) MiB.*/\2/p' "$work/ours.out" | tail -n 1)
  awk -F, -v warmup="$warmup" -v last=$((warmup + steps)) -v samples=$((batch * ${units:-1})) -v peak="${peak:--}" '
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    $col["kind"] == "eval" { next }
    $col["step"] == warmup { start = $col["elapsed_seconds"] }
    $col["step"] > warmup { wait += $col["data_wait_percent"]; ++windows }
    $col["step"] == last { end = $col["elapsed_seconds"] }
    END {
      if (end <= start) { print "no timed steps in the log" > "/dev/stderr"; exit 1 }
      printf "%.0f %.1f %s\n", (last - warmup) * samples / (end - start), wait / windows, peak
    }' "$work/log.csv"
}
theirs() {  # theirs MODEL BATCH WARMUP STEPS
  local model=$1 batch=$2 warmup=$3 steps=$4 cmd
  case "$model" in
    cnn) cmd=(bench/torch_train.py cnn "$steps" "$fashion" --batch "$batch" --warmup "$warmup") ;;
    resnet*) cmd=(bench/torch_resnet.py "$model" "$steps" "$work/cifar10" "$batch" "$warmup") ;;
    gpt) cmd=(bench/torch_gpt.py train "$steps" "$work/text.txt" "$batch" "" 1e-3 --warmup "$warmup") ;;
  esac
  if ! env "${peer_env[@]}" "$python" "${cmd[@]}" --device "$device" >"$work/theirs.out" 2>&1; then
    echo "PyTorch peer ${cmd[0]} --device $device failed:" >&2
    tail -n 5 "$work/theirs.out" >&2
    return 1
  fi
  awk '/^(samples|tokens)\/s / {
    peak = "-"
    for (i = 1; i < NF; ++i) if ($i == "peak_device_mib") peak = $(i + 1)
    printf "%.0f - %s\n", $2, peak; found = 1 }
    END { if (!found) print "no rate in the peer output" > "/dev/stderr"; exit !found }' "$work/theirs.out"
}

# ---- the table: pair by pair over the models (so that a budget cut leaves every model some pairs)
echo "GPU models beside PyTorch on $device: $about; syncgrad $train; float32 (no TF32)"
echo "data: $fashion_about; random CIFAR-10-format images; text: this repository's sources ($(wc -c <"$work/text.txt") bytes)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); rates over N timed steps after W warm-up steps"
printf "%-9s %5s %3s %4s %4s %14s %14s %6s %10s %14s\n" model batch W N pair "syncgrad rate" "PyTorch rate" \
  ratio data-wait "peak MiB sg/pt"
declare -A ratios ours_rates their_rates pair_seconds
failed=0
longest_pair=0
for pair in $(seq 1 "$pairs"); do
  for model in $models; do
    read -r batch warmup steps <<<"${spec[$model]}"
    expected=${pair_seconds[$model]:-$longest_pair}
    if [ "$budget" -gt 0 ] && [ $((SECONDS + expected)) -gt "$budget" ]; then
      echo "$model: pair $pair left out (about ${expected}s; ${SECONDS}s of the ${budget}s budget used)"
      continue
    fi
    pair_start=$SECONDS
    read -r a a_wait a_peak < <(ours "$model" "$batch" "$warmup" "$steps") || { failed=1; continue; }
    read -r b _ b_peak < <(theirs "$model" "$batch" "$warmup" "$steps") || { failed=1; continue; }
    pair_seconds[$model]=$((SECONDS - pair_start))
    [ "${pair_seconds[$model]}" -gt "$longest_pair" ] && longest_pair=${pair_seconds[$model]}
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')
    ratios[$model]+=" $ratio"; ours_rates[$model]+=" $a"; their_rates[$model]+=" $b"
    printf "%-9s %5s %3s %4s %4s %14s %14s %6s %9s%% %14s\n" "$model" "$batch" "$warmup" "$steps" "$pair" \
      "$a" "$b" "$ratio" "$a_wait" "$a_peak/$b_peak"
  done
done
median() { if [ $# -eq 0 ]; then echo -; else printf "%s\n" "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; fi; }
echo "medians (ratio = syncgrad / PyTorch, the median of the pairs' ratios; target >= 1):"
printf "%-9s %-10s %14s %14s %6s %5s\n" model unit syncgrad PyTorch ratio pairs
for model in $models; do
  unit=samples/s; [ "$model" = gpt ] && unit=tokens/s
  # shellcheck disable=SC2086  # the lists are space-separated numbers
  printf "%-9s %-10s %14s %14s %6s %5s\n" "$model" "$unit" "$(median ${ours_rates[$model]:-})" \
    "$(median ${their_rates[$model]:-})" "$(median ${ratios[$model]:-})" "$(wc -w <<<"${ratios[$model]:-}")"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); ${SECONDS}s"
exit "$failed"
