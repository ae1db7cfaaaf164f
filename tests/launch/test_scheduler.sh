#!/usr/bin/env bash
# Jobs started the way srun starts them, with the SLURM_* variables srun sets (no Slurm daemon needed; the real
# cluster tests live elsewhere): two ranks as the two tasks of a step; syncgrad-launch as the two tasks of a
# 2-node step (one per node), taking --nnodes, --node-rank, --master-addr and --master-port from the step; a flag
# that contradicts the step; RANK left exported beside srun's variables; and SIGUSR1 (sbatch --signal=USR1@60)
# passed on by syncgrad-launch to its ranks.
# Usage: test_scheduler.sh path/to/syncgrad-launch path/to/launch_allreduce_check path/to/launch_rank_probe
set -u
launch=$(realpath "$1")
program=$(realpath "$2")
probe=$(realpath "$3")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
# Whatever started this test (srun, mpirun, syncgrad-launch) must not leak into the jobs below.
clean=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT -u SYNCGRAD_LAUNCHER
  -u SYNCGRAD_JOB_ID -u SYNCGRAD_STORE_TOKEN -u SYNCGRAD_STORE_SERVED -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE
  -u PMI_RANK -u PMI_SIZE -u SLURM_NTASKS -u SLURM_NPROCS -u SLURM_NNODES -u SLURM_TASKS_PER_NODE
  -u SLURM_NTASKS_PER_NODE -u SLURM_JOB_NODELIST -u SLURM_NODELIST -u SLURM_STEP_RESV_PORTS)
job=$((100000 + $$ % 50000))
# task STEP PROCID NTASKS NNODES: the variables srun sets for task PROCID of step STEP of $job (1 task per node
# when NTASKS = NNODES, else all on one node), on hosts localhost.
task() {
  local per_node=$(($3 / $4))
  echo SLURM_JOB_ID=$job SLURM_STEP_ID="$1" SLURM_PROCID="$2" SLURM_STEP_NUM_TASKS="$3" SLURM_STEP_NUM_NODES="$4" \
    SLURM_NODEID=$(($2 / per_node)) SLURM_LOCALID=$(($2 % per_node)) SLURM_STEP_TASKS_PER_NODE="$per_node(x$4)" \
    SLURM_STEP_NODELIST=localhost
}

# 1. Two ranks as the tasks of `srun -n 2` on one node: 127.0.0.1 and the port derived from the job and step.
for r in 0 1; do
  # shellcheck disable=SC2046  # task's words are separate assignments
  "${clean[@]}" $(task 0 $r 2 1) timeout 60 "$program" >"$tmp/srun.$r" 2>&1 &
  pids+=($!)
done
wait "${pids[0]}"; s0=$?; wait "${pids[1]}"; s1=$?
port=$((20000 + job % 10000))
check "srun tasks: both ranks allreduce ($s0, $s1)" test $s0 -eq 0 -a $s1 -eq 0
check "srun tasks: rank 0 says where the job came from" \
  grep -qx "rendezvous: slurm, job $job.0, 2 ranks on 1 node, master 127.0.0.1:$port" "$tmp/srun.0"
check "srun tasks: only rank 0 says it" lacks "rendezvous:" "$tmp/srun.1"

# 2. syncgrad-launch as the two tasks of a 2-node step (here both on this machine), one rank each; the step's
#    reserved port (SLURM_STEP_RESV_PORTS, free a moment ago) keeps the test off ports in use.
free=$("$probe" --free-port)
pids=()
for n in 0 1; do
  # shellcheck disable=SC2046
  "${clean[@]}" $(task 3 $n 2 2) SLURM_STEP_RESV_PORTS="$free-$((free + 1))" \
    timeout 60 "$launch" --nproc-per-node 1 "$program" >"$tmp/node.$n" 2>&1 &
  pids+=($!)
done
wait "${pids[0]}"; s0=$?; wait "${pids[1]}"; s1=$?
check "launcher under srun: both nodes' ranks allreduce ($s0, $s1)" test $s0 -eq 0 -a $s1 -eq 0
check "launcher under srun: node 1 took its flags from the step" grep -q "syncgrad-launch: from Slurm job $job.3: \
--nnodes 2 --node-rank 1 --master-addr localhost (the step's first node) --master-port $free (the step's first \
reserved port (SLURM_STEP_RESV_PORTS=$free-$((free + 1))))" "$tmp/node.1"
check "launcher under srun: the ranks are numbered across the nodes" grep -q "rank 1 of 2" "$tmp/node.1"
check "launcher under srun: rank 0 names the launcher and the step as the job" \
  grep -q "^\[rank0\]: rendezvous: syncgrad-launch, job $job.3, 2 ranks on 1 node, master localhost:$free" \
  "$tmp/node.0"

# 3. A flag that contradicts the step.
# shellcheck disable=SC2046
out=$("${clean[@]}" $(task 3 0 2 2) "$launch" --nnodes 3 "$program" 2>&1); status=$?
check "--nnodes 3 in a 2-node step is refused (status $status)" test $status -eq 2
check "naming both" grep -qF -- "--nnodes 3 contradicts Slurm: Slurm job $job.3 runs 2 tasks on 2 nodes" <<<"$out"

# 4. RANK left exported in the job script, beside srun's variables: an error naming both, not a collision.
# shellcheck disable=SC2046
out=$("${clean[@]}" $(task 0 1 2 1) RANK=0 WORLD_SIZE=2 timeout 60 "$program" 2>&1); status=$?
check "stale RANK beside SLURM_PROCID is refused (status $status)" test $status -ne 0
check "naming both and the fix" grep -q "RANK=0 but SLURM_PROCID=1 .*unset RANK and WORLD_SIZE" <<<"$out"

# 5. SIGUSR1 to syncgrad-launch reaches every rank; ranks that save and exit 75 make the launcher exit 75, ranks
#    that do not handle it die of it as they would without the launcher.
started() { [ -s "$tmp/up.0" ] && [ -s "$tmp/up.1" ]; }
rm -f "$tmp"/up.*
"${clean[@]}" "$launch" --nproc-per-node 2 sh -c \
  "trap '' TERM; trap 'echo \"rank \$RANK saved\"; exit 75' USR1; echo up >$tmp/up.\$RANK; sleep 60 & wait" >"$tmp/usr1" 2>&1 &
launcher=$!
check "SIGUSR1: ranks started" wait_for 20 started
kill -USR1 $launcher
wait $launcher; status=$?
check "SIGUSR1: the launcher exits 75 like its ranks ($status)" test $status -eq 75
check "SIGUSR1: passed on" grep -q "syncgrad-launch: got SIGUSR1; passing it on to 2 ranks" "$tmp/usr1"
check "SIGUSR1: rank 0 got it" grep -q "^\[rank0\]: rank 0 saved" "$tmp/usr1"
check "SIGUSR1: rank 1 got it" grep -q "^\[rank1\]: rank 1 saved" "$tmp/usr1"
rm -f "$tmp"/up.*
"${clean[@]}" "$launch" --nproc-per-node 2 sh -c "echo up >$tmp/up.\$RANK; sleep 60 & wait" >"$tmp/usr1" 2>&1 &
launcher=$!
check "SIGUSR1 unhandled: ranks started" wait_for 20 started
kill -USR1 $launcher
wait $launcher; status=$?
check "SIGUSR1 unhandled: the ranks die of it, the launcher says so ($status)" test $status -eq 138
check "SIGUSR1 unhandled: stopped without SIGKILL" lacks "sending SIGKILL" "$tmp/usr1"
finish
