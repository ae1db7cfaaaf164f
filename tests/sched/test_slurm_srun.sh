#!/usr/bin/env bash
# syncgrad-train started by a real Slurm's srun (a private cluster, tests/sched/slurm_cluster.sh: two nodes in
# network namespaces where the machine allows, so the rendezvous crosses a virtual network): each task finds its
# rank, the world and the master node from Slurm's variables alone, trains under DDP, and rank 0's final weights
# equal, byte for byte, those of the same run under syncgrad-launch --nproc-per-node 2. Then two tasks on one
# node (SLURM_LOCALID), and syncgrad-launch as the one task per node that srun starts (2 ranks per node).
# Usage: test_slurm_srun.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch=$(realpath "$1"); train=$(realpath "$2")
. "$(dirname "$0")/slurm_cluster.sh"
require_fashion_mnist
slurm_cluster_start 2
nodes=$slurm_node_count
work=$slurm_dir/work
args=(--model mlp --workers 1 --max-steps 30 --log-every 10)
start=$(date +%s%N)

# The reference: the same training under syncgrad-launch on this machine.
slurm_run "$launch" --nproc-per-node 2 "$train" "${args[@]}" --checkpoint-dir "$work/launch" >"$work/launch.log" 2>&1
check "the syncgrad-launch reference run succeeds" test $? -eq 0

# srun with 2 tasks, one per node when there are two.
slurm_run in_cluster timeout 120 srun -N "$nodes" -n 2 "$train" "${args[@]}" --checkpoint-dir "$work/srun" >"$work/srun.log" 2>&1
status=$?
grep -v "step " "$work/srun.log" | tail -6
check "srun -N $nodes -n 2 syncgrad-train succeeds" test $status -eq 0
check "it trains with DDP on 2 processes" grep -q "2 processes (DDP over gloo" "$work/srun.log"
if [ "$nodes" -eq 2 ]; then master="node0:[0-9]*"; else master="127.0.0.1:[0-9]*"; fi
node_word=nodes; [ "$nodes" -eq 1 ] && node_word=node
check "rank 0 says Slurm placed 2 ranks on $nodes $node_word, meeting at $master" \
  grep -qx "rendezvous: slurm, job [0-9]*\.0, 2 ranks on $nodes $node_word, master $master" "$work/srun.log"
check "rank 0 reports the result" grep -q "done: 30 steps" "$work/srun.log"
check "rank 0's final weights equal the syncgrad-launch run's, byte for byte" \
  cmp "$work/srun/latest/model.safetensors" "$work/launch/latest/model.safetensors"

# Two tasks on one node: local ranks 0 and 1 from SLURM_LOCALID, the same result.
slurm_run in_cluster timeout 120 srun -N 1 -n 2 "$train" "${args[@]}" --checkpoint-dir "$work/one-node" >"$work/one-node.log" 2>&1
status=$?
check "srun -N 1 -n 2 syncgrad-train succeeds" test $status -eq 0
check "... meeting on 127.0.0.1" grep -qx "rendezvous: slurm, job [0-9]*\.0, 2 ranks on 1 node, master 127.0.0.1:[0-9]*" \
  "$work/one-node.log"
check "... with the same final weights" cmp "$work/one-node/latest/model.safetensors" "$work/launch/latest/model.safetensors"

# syncgrad-launch as srun's one task per node, two ranks each: 2 x nodes ranks in all, equal to one launcher
# starting them all on this machine.
ranks=$((2 * nodes))
slurm_run "$launch" --nproc-per-node "$ranks" "$train" "${args[@]}" --checkpoint-dir "$work/launch-$ranks" >"$work/launch-$ranks.log" 2>&1
check "the syncgrad-launch reference run with $ranks ranks succeeds" test $? -eq 0
slurm_run in_cluster timeout 120 srun -N "$nodes" --ntasks-per-node=1 "$launch" --nproc-per-node 2 "$train" "${args[@]}" \
  --checkpoint-dir "$work/srun-launch" >"$work/srun-launch.log" 2>&1
status=$?
grep -v "step " "$work/srun-launch.log" | tail -4
check "srun -N $nodes --ntasks-per-node=1 syncgrad-launch --nproc-per-node 2 succeeds" test $status -eq 0
check "it trains with DDP on $ranks processes" grep -q "$ranks processes (DDP over gloo" "$work/srun-launch.log"
check "rank 0 says syncgrad-launch placed $ranks ranks on $nodes $node_word" \
  grep -q "rendezvous: syncgrad-launch, job [0-9]*\.0, $ranks ranks on $nodes $node_word" "$work/srun-launch.log"
check "... with the final weights of one launcher starting $ranks ranks" \
  cmp "$work/srun-launch/latest/model.safetensors" "$work/launch-$ranks/latest/model.safetensors"
echo "srun runs on $nodes node(s) done after $(elapsed_ms "$start") ms"
finish
