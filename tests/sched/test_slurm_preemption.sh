#!/usr/bin/env bash
# Preemption under a real Slurm (tests/sched/slurm_cluster.sh): a batch job submitted with
# `sbatch --time=1 --signal=USR1@50 --requeue` gets SIGUSR1 from slurmctld before its time limit; every rank of
# syncgrad-train (2 srun tasks) saves the same step and exits 75, which srun passes on, and the job script (the
# one of docs/GUIDE.md §12) requeues its job, whose next run continues from that step with --resume auto.
# Then syncgrad-launch (one per node, started by srun inside the job), preempted with `scancel --signal=USR1`,
# which the launcher forwards: the requeued job ends with the weights and training state of an uninterrupted
# run, bit for bit. (The first part stops at an unknown step, 10-40 s in: an uninterrupted run to it would take
# as long again, so the bit-for-bit comparison is made in the second.)
# Usage: test_slurm_preemption.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch=$(realpath "$1"); train=$(realpath "$2")
. "$(dirname "$0")/slurm_cluster.sh"
require_fashion_mnist
slurm_cluster_start 2
nodes=$slurm_node_count
work=$slurm_dir/work
args=(--model mlp --workers 1 --log-every 4 --epochs 1000)

job_field() { in_cluster scontrol show job -o "$1" 2>/dev/null | grep -o "$2=[^ ]*" | cut -d= -f2; }
job_done() { case "$(job_field "$1" JobState)" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) return 0 ;; *) return 1 ;; esac; }
# only_preempted log: no rank reported an error, and every task srun reports ended with 75.
only_preempted() { lacks "syncgrad-train: error" "$1" && ! grep "Exited with exit code" "$1" | grep -qv "exit code 75$"; }
has_step() { grep -qs "step $2/" "$1"; }

# job_script name step-command...: the batch script of docs/GUIDE.md §12: it runs the command with --resume
# auto (the step limit read from $work/name.steps at its start: the test sets it) and, when that exits 75,
# requeues its own job.
job_script() {
  local name="$1"; shift
  { echo '#!/bin/bash'
    printf '%q ' "$@" "$train" "${args[@]}" --checkpoint-dir "$work/$name.ckpt" --resume auto
    echo "--max-steps \"\$(cat $(printf '%q' "$work/$name.steps"))\""
    echo 'status=$?'
    echo 'if [ $status -eq 75 ]; then scontrol requeue "$SLURM_JOB_ID"; fi'
    echo 'exit $status'
  } >"$work/$name.sh"
}
preempted_line() { grep -q "preempted (SIGUSR1): stopped after step" "$1"; }
job_requeued() { [ "$(job_field "$1" Restarts)" = 1 ] && [ "$(job_field "$1" JobState)" = PENDING ]; }
# preempted_and_requeued name id: rank 0 said the SIGUSR1 stopped it after a step ($stop_step), which is saved,
# complete and the newest; the next run will stop 8 steps later; every task exited 75 and the job requeued itself.
preempted_and_requeued() {
  local name="$1" id="$2"
  check "$name: rank 0 said the SIGUSR1 stopped it after a step" wait_for 90 preempted_line "$work/$name.out"
  stop_step=$(sed -n 's/.*preempted (SIGUSR1): stopped after step \([0-9]*\), saved .*/\1/p' "$work/$name.out")
  stop_step=${stop_step:-0}
  end=$((stop_step + 8))
  echo "$end" >"$work/$name.steps"
  check "$name: the job requeued itself" wait_for 60 job_requeued "$id"
  grep -v "step " "$work/$name.out" | tail -5
  check "$name: srun passed on exit status 75 (preempted, resumable)" grep -q "Exited with exit code 75$" "$work/$name.out"
  check "$name: no rank failed (each exited 75)" only_preempted "$work/$name.out"
  local saved; saved=$(printf 'step-%06d' "$stop_step")
  check "$name: that step is saved, complete" test -f "$work/$name.ckpt/$saved/manifest.json"
  check "$name: latest points at it" test "$(readlink "$work/$name.ckpt/latest")" = "$saved"
}
# resumes name id: started again, the job resumes from the stop step, saves the last one and succeeds.
resumes() {
  local name="$1" id="$2"
  # Slurm starts it again once the old run's credentials have expired (cred_expire, 10 s in the test cluster).
  check "$name: the requeued job ended" wait_for 90 job_done "$id"
  echo "$name: job $id: $(in_cluster scontrol show job -o "$id" | grep -oE '(JobState|Restarts|ExitCode|Reason|StartTime)=[^ ]*' | tr '\n' ' ')"
  check "$name: it succeeded" test "$(job_field "$id" ExitCode)" = "0:0"
  if [ "$(job_field "$id" ExitCode)" != "0:0" ]; then
    grep -h -e "JobId=$id" -e "\[$id\." "$slurm_dir"/slurmd-*.log "$slurm_dir/slurmctld.log" | tail -n 12
  fi
  check "$name: it resumed from the stop step" \
    grep -q "resumed from $work/$name.ckpt/$(printf 'step-%06d' "$stop_step")" "$work/$name.out"
  check "$name: it saved the last step" test -f "$work/$name.ckpt/$(printf 'step-%06d' "$end")/manifest.json"
}
# equals_straight name straight-run...: the resumed job's last checkpoint has the weights and training state of
# an uninterrupted run to the same step.
equals_straight() {
  local name="$1" last; shift
  last=$(printf 'step-%06d' "$end")
  slurm_run "$@" "$train" "${args[@]}" --max-steps "$end" --checkpoint-dir "$work/$name.straight" >"$work/$name.straight.log" 2>&1
  check "$name: an uninterrupted run of $end steps succeeds" test $? -eq 0
  check "$name: the resumed weights equal the uninterrupted run's" \
    cmp "$work/$name.ckpt/$last/model.safetensors" "$work/$name.straight/$last/model.safetensors"
  check "$name: so does the training state" \
    cmp "$work/$name.ckpt/$last/training_state.safetensors" "$work/$name.straight/$last/training_state.safetensors"
}
start=$(date +%s%N)

# 1. --signal=USR1@50 with a one-minute limit: slurmctld sends SIGUSR1 to the job's steps within ~40 s.
echo 1000000 >"$work/signal.steps"
job_script signal srun
id=$(in_cluster sbatch --parsable -N "$nodes" -n 2 --time=1 --signal=USR1@50 --requeue --open-mode=append \
  -o "$work/signal.out" "$work/signal.sh")
check "sbatch --signal=USR1@50 accepted the job" test -n "$id"
preempted_and_requeued signal "$id"
resumes signal "$id"
echo "signal: done after $(elapsed_ms "$start") ms"

# 2. syncgrad-launch per node inside the job, SIGUSR1 from scancel once training is under way.
start=$(date +%s%N)
echo 1000000 >"$work/launch.steps"
# Two ranks per node: with two nodes, 4 ranks, whose sums depend on their order (a resume is still bit-exact).
per_node=2
job_script launch srun --ntasks-per-node=1 "$launch" --nproc-per-node "$per_node"
id=$(in_cluster sbatch --parsable -N "$nodes" --ntasks-per-node=1 --requeue --open-mode=append \
  -o "$work/launch.out" "$work/launch.sh")
check "sbatch accepted the syncgrad-launch job" test -n "$id"
check "launch: training reached step 8" wait_for 60 has_step "$work/launch.out" 8
in_cluster scancel --signal=USR1 "$id"
preempted_and_requeued launch "$id"
resumes launch "$id"
equals_straight launch "$launch" --nproc-per-node $((nodes * per_node))
echo "launch: done after $(elapsed_ms "$start") ms"
finish
