#!/usr/bin/env bash
# syncgrad-train started by Open MPI's mpirun (Debian's openmpi-bin; no MPI library is used, only the variables
# mpirun gives each process: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE): two processes on this
# machine train under DDP and rank 0's final weights equal, byte for byte, those of the same run under
# syncgrad-launch --nproc-per-node 2.
# Usage: test_mpirun.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch=$(realpath "$1"); train=$(realpath "$2")
. "$(dirname "$0")/../launch/common.sh"
command -v mpirun >/dev/null || { echo "skipped: mpirun is not installed (scripts/setup-schedulers.sh installs openmpi-bin)"; exit 77; }
require_fashion_mnist
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
args=(--model mlp --workers 1 --max-steps 30 --log-every 10)
root_flag=()
[ "$(id -u)" -eq 0 ] && root_flag=(--allow-run-as-root)

"$launch" --nproc-per-node 2 "$train" "${args[@]}" --checkpoint-dir "$tmp/launch" >"$tmp/launch.log" 2>&1
check "the syncgrad-launch reference run succeeds" test $? -eq 0

start=$(date +%s%N)
timeout 120 mpirun "${root_flag[@]}" --oversubscribe -np 2 "$train" "${args[@]}" --checkpoint-dir "$tmp/mpi" >"$tmp/mpi.log" 2>&1
status=$?
echo "mpirun -np 2: $(elapsed_ms "$start") ms"
grep -v "step " "$tmp/mpi.log" | tail -6
check "mpirun -np 2 syncgrad-train succeeds" test $status -eq 0
check "it trains with DDP on 2 processes" grep -q "2 processes (DDP over gloo" "$tmp/mpi.log"
check "rank 0 says Open MPI placed 2 ranks on 1 node, meeting on 127.0.0.1" \
  grep -q "^rendezvous: openmpi, job [^ ]*, 2 ranks on 1 node, master 127.0.0.1:[0-9]*$" "$tmp/mpi.log"
check "one rank reports the result" test "$(grep -c "done: 30 steps" "$tmp/mpi.log")" -eq 1
check "rank 0's final weights equal the syncgrad-launch run's, byte for byte" \
  cmp "$tmp/mpi/latest/model.safetensors" "$tmp/launch/latest/model.safetensors"
finish
