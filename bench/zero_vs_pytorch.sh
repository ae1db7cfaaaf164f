#!/usr/bin/env bash
# ZeRO memory and speed: the GPT trained with AdamW by syncgrad-train under plain DDP, --zero 1 and --zero 2 at
# world 1 and 2 (one thread per rank), and by PyTorch (bench/torch_zero.py: DDP with AdamW, and with
# torch.distributed.optim.ZeroRedundancyOptimizer) on the same model in the same run. Per configuration, rank 0's
# median step time, its peak tensor memory (syncgrad's allocator; PyTorch's CPU allocator keeps no such count),
# its peak RSS and the optimizer-state bytes it holds (syncgrad: what stays allocated under the optimizer step's
# memory tag; PyTorch: the sizes of its optimizer's state tensors). syncgrad's step time comes from the tokens/s
# of its last progress window (warm-up steps excluded); PyTorch's is the median of its timed steps.
# PyTorch: bench/peer.sh (PyTorch 2.x from PyPI in build/peer-venv: scripts/setup-peers.sh).
# Usage: bench/zero_vs_pytorch.sh [steps=8] [batch=8] [model_config="n_layer=12,n_head=12,n_embd=768"]
#        [worlds="1 2"] [text=/usr/share/games/fortunes]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-8}; batch=${2:-8}; config=${3:-n_layer=12,n_head=12,n_embd=768}; worlds=${4:-1 2}
text=${5:-/usr/share/games/fortunes}
build=${BUILD:-build}
. bench/peer.sh
[ -e "$text" ] || { echo "no text at $text: apt-get install fortunes, or pass a text file"; exit 1; }
# Extra flag sets: each configuration runs once per set (syncgrad-train flags | torch_zero.py flags), e.g. add
# "--activation-checkpointing|--checkpointing" for activation checkpointing on both sides.
flag_sets=("|" "--activation-checkpointing|--checkpointing")
block=$(sed -n 's/.*block_size=\([0-9]*\).*/\1/p' <<<"$config"); block=${block:-128}
warmup=2
window=$((steps - warmup))

# ours WORLD ZERO EXTRA: "step_ms peak_tensor_mib peak_rss_mib state_mib" of rank 0.
ours() {
  local world=$1 zero=$2 extra=$3 out
  # shellcheck disable=SC2086
  out=$(OMP_NUM_THREADS=1 "$build/tools/syncgrad-launch" --nproc-per-node "$world" "$build/tools/syncgrad-train" \
    --parallel ddp --model gpt --data-dir "$text" --model-config "$config" --batch-size "$batch" \
    --optimizer adamw --lr 1e-4 --threads 1 --workers 1 --max-steps $((warmup + window)) --log-every "$warmup" \
    --zero "$zero" $extra 2>&1)
  local tokens_per_s
  tokens_per_s=$(sed -n 's/.*  \([0-9]*\) tokens\/s .*/\1/p' <<<"$out" | tail -n 1)
  [ -n "$tokens_per_s" ] || { echo "syncgrad-train failed:" >&2; tail -5 <<<"$out" >&2; echo "- - - -"; return; }
  python3 - "$tokens_per_s" "$world" "$batch" "$block" "$out" <<'PY'
import re, sys
tokens_per_s, world, batch, block, out = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
step_ms = 1000 * batch * block * world / tokens_per_s
tensor = re.search(r"peak tensor memory ([0-9.]+) MiB", out).group(1)
state = re.search(r"optimizer state ([0-9.]+) MiB", out).group(1)
rss = re.search(r"peak RSS ([0-9.]+) MiB", out).group(1)
print(f"{step_ms:.0f} {tensor} {rss} {state}")
PY
}

# theirs WORLD MODE EXTRA: "step_ms - peak_rss_mib state_mib" of rank 0.
theirs() {
  local world=$1 mode=$2 extra=$3 line
  # shellcheck disable=SC2086
  line=$(run_peer bench/torch_zero.py "$mode" "$world" "$window" "$batch" "$config" --warmup "$warmup" $extra 2>&1 |
    grep '^step_ms' || true)
  [ -n "$line" ] || { echo "- - - -"; return; }
  awk '{ print $2, "-", $4, $6 }' <<<"$line"
}

echo "GPT $config (block $block), batch $batch per rank, AdamW, $window timed steps after $warmup, 1 thread per rank"
echo "CPU: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores; $(date -u +%F); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-9s %-5s %-24s %9s %17s %13s %17s\n" program world mode "step ms" "peak tensor MiB" "peak RSS MiB" \
  "opt. state MiB"
for flags in "${flag_sets[@]}"; do
  ours_flags=${flags%%|*}; their_flags=${flags#*|}
  for world in $worlds; do
    for zero in 0 1 2; do
      read -r ms tensor rss state <<<"$(ours "$world" "$zero" "$ours_flags")"
      mode=$([ "$zero" = 0 ] && echo "DDP" || echo "ZeRO-$zero")
      printf "%-9s %-5s %-24s %9s %17s %13s %17s\n" syncgrad "$world" "$mode $ours_flags" "$ms" "$tensor" "$rss" "$state"
    done
    for mode in ddp zero1; do
      read -r ms tensor rss state <<<"$(theirs "$world" "$mode" "$their_flags")"
      name=$([ "$mode" = ddp ] && echo "DDP" || echo "ZeroRedundancyOptimizer")
      printf "%-9s %-5s %-24s %9s %17s %13s %17s\n" PyTorch "$world" "$name $their_flags" "$ms" "$tensor" "$rss" "$state"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
