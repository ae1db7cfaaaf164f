#!/usr/bin/env bash
# Activation checkpointing: a GPT training step's peak memory per rank and step time, with and without
# checkpointing each transformer block, at world size 1 and 2 (DDP over Gloo, one thread per rank), for
# syncgrad (syncgrad-bench activation-checkpointing; nn::checkpoint, reentrant, DDP static_graph) and PyTorch 2.x
# in the same run (bench/torch_activation_checkpointing.py: torch.utils.checkpoint with use_reentrant=False, and
# =True under DDP static_graph), alternating the programs (A B A B ...). "activations" is the forward+backward
# high-water mark above what was allocated before the forward (parameters, gradients zeroed in place, optimizer
# state); see both programs' top comments for how each measures it. The summary gives, per program and world size, the median over pairs of
# rank 0's activation-memory ratio (off / on) and step-time ratio (on / off).
# PyTorch: bench/peer.sh (build/peer-venv from scripts/setup-peers.sh).
# Usage: bench/activation_checkpointing_vs_pytorch.sh [pairs=2] [steps=3] [batch=8]
#          [model_config=n_layer=12,n_embd=768,n_head=12,block_size=128] [warmup=1]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-2}; steps=${2:-3}; batch=${3:-8}; config=${4:-n_layer=12,n_embd=768,n_head=12,block_size=128}
warmup=${5:-1}  # at least 1: the first step allocates the gradients
build=${BUILD:-build}
. bench/peer.sh
[ -x "$build/bench/syncgrad-bench" ] || { echo "no $build/bench/syncgrad-bench: build first (scripts/setup.sh)"; exit 1; }
results=$(mktemp)
trap 'rm -f "$results"' EXIT
ours() {  # world, then --checkpointing or nothing
  local world=$1; shift
  local args=(activation-checkpointing --model-config "$config" --batch "$batch" --steps "$steps" --warmup "$warmup" "$@")
  if [ "$world" = 1 ]; then
    OMP_NUM_THREADS=1 "$build/bench/syncgrad-bench" "${args[@]}"
  else
    OMP_NUM_THREADS=1 "$build/tools/syncgrad-launch" --nproc-per-node "$world" "$build/bench/syncgrad-bench" "${args[@]}"
  fi
}
theirs() {  # mode, world
  run_peer bench/torch_activation_checkpointing.py "$1" "$2" "$config" "$batch" "$steps" "$warmup"
}
echo "GPT $config, batch $batch per rank, $steps timed steps after $warmup; $(nproc) cores: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in $(seq 1 "$pairs"); do
  for world in 1 2; do
    for run in "syncgrad off" "pytorch off" "syncgrad on" "pytorch nonreentrant" "pytorch reentrant"; do
      set -- $run
      case "$1 $2" in
        "syncgrad off") lines=$(ours "$world") ;;
        "syncgrad on") lines=$(ours "$world" --checkpointing) ;;
        *) lines=$(theirs "$2" "$world") ;;
      esac
      echo "$lines" | sed 's/^\[rank[0-9]*\]: //' | grep '^rank ' | sed "s/^/pair $pair $1 /" | tee -a "$results"
    done
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = {}  # (program, world, mode, pair) -> rank 0's fields
for line in open(sys.argv[1]):
    f = line.split()  # pair N PROGRAM rank R world W checkpointing M ...
    d = dict(zip(f[3::2], f[4::2]))
    if d["rank"] == "0":
        rows[(f[2], d["world"], d["checkpointing"], f[1])] = d
def median_of(key, field, pairs):
    return statistics.median(float(rows[key + (p,)][field]) for p in pairs)
print(f"{'program':9} {'world':>5} {'checkpointing':>13} {'activations MiB':>16} {'ms/step':>8} {'CPU ms/step':>12} "
      f"{'memory off/on':>14} {'time on/off':>12} {'CPU time on/off':>16}")
for program, world, mode in sorted({k[:3] for k in rows}):
    key = (program, world, mode)
    pairs = sorted(k[3] for k in rows if k[:3] == key)
    off = (program, world, "0" if program == "syncgrad" else "off")
    ratios = ["", "", ""]
    if mode != off[2]:
        def ratio(field, inverse=False):
            values = [float(rows[off + (p,)][field]) / float(rows[key + (p,)][field]) for p in pairs]
            return f"{statistics.median(1 / v if inverse else v for v in values):.2f}x"
        ratios = [ratio("activations_mib"), ratio("ms_per_step", True), ratio("cpu_ms_per_step", True)]
    label = {"0": "off", "1": "on"}.get(mode, mode)
    print(f"{program:9} {world:>5} {label:>13} {median_of(key, 'activations_mib', pairs):16.1f} "
          f"{median_of(key, 'ms_per_step', pairs):8.0f} {median_of(key, 'cpu_ms_per_step', pairs):12.0f} "
          f"{ratios[0]:>14} {ratios[1]:>12} {ratios[2]:>16}")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
