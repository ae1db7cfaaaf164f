#!/usr/bin/env bash
# Preemption: SIGTERM or SIGUSR1 (what Slurm and Kubernetes send before a kill) makes every rank finish its step,
# save that step together and exit with status 75 (preempted, resumable); --resume auto then ends with the
# weights and training state of an uninterrupted run, bit for bit. One process (a second SIGTERM while the
# checkpoint is being written changes nothing; SIGUSR1 too), and 2 ranks under syncgrad-launch (Gloo on
# 127.0.0.1) with SIGTERM or SIGUSR1 sent to the launcher, which forwards it, or to rank 1 alone.
# Usage: test_preemption.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../launch/common.sh"
tmp=$(mktemp -d)
victim=""
cleanup() { if [ -n "$victim" ]; then kill -KILL "$victim" 2>/dev/null; fi; rm -rf "$tmp"; }
trap cleanup EXIT
for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
args=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16" --batch-size 4
  --optimizer adamw --lr 0.01 --workers 1 --log-every 4 --epochs 1000)
has_step() { grep -qs "step $2/" "$1"; }
exists() { compgen -G "$1" >/dev/null; }
rank_pid() {  # rank_pid launcher_pid rank: the pid of that rank's process
  local child
  for child in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx "RANK=$2"; then echo "$child"; fi
  done
}

# start name command...: runs the command in the background (output in $tmp/name.log) until step 8 is logged.
start() {
  local name="$1"; shift
  "$@" >"$tmp/$name.log" 2>&1 &
  victim=$!
  echo $victim >"$tmp/$name.pid"
  check "$name: the run reached step 8" wait_for 120 has_step "$tmp/$name.log" 8
}
# stopped name dir: waits for the run, checks its status (75) and that the step it stopped after is saved
# complete and is the newest; sets $stop_step.
stopped() {
  local name="$1" dir="$2" status
  check "$name: the run ended after the signal" wait_for 120 gone "$tmp/$name.pid"
  wait "$victim"; status=$?; victim=""
  grep -v "step " "$tmp/$name.log" | tail -4
  check "$name: it exited with status 75 (preempted, resumable)" test "$status" -eq 75
  stop_step=$(sed -n 's/.*preempted (.*): stopped after step \([0-9]*\), saved .*/\1/p' "$tmp/$name.log")
  check "$name: rank 0 said after which step it stopped" test -n "$stop_step"
  stop_step=${stop_step:-0}
  local saved; saved=$(printf 'step-%06d' "$stop_step")
  check "$name: that step is saved, complete" test -f "$dir/$saved/manifest.json"
  check "$name: latest points at it" test "$(readlink "$dir/latest")" = "$saved"
  check "$name: no unfinished save is left" test -z "$(cd "$dir" && compgen -G '*.tmp.*')"
}
# resumes_exactly name dir run...: --resume auto to 8 steps past the stop equals an uninterrupted run.
resumes_exactly() {
  local name="$1" dir="$2" out status; shift 2
  local end=$((stop_step + 8)) last; last=$(printf 'step-%06d' $((stop_step + 8)))
  out=$("$@" "${args[@]}" --max-steps $end --resume auto --checkpoint-dir "$dir" 2>&1); status=$?
  check "$name: --resume auto succeeds" test $status -eq 0
  check "$name: it resumed from the stop step" grep -q "resumed from $dir/$(printf 'step-%06d' "$stop_step")" <<<"$out"
  out=$("$@" "${args[@]}" --max-steps $end --checkpoint-dir "$tmp/$name-straight" 2>&1); status=$?
  check "$name: an uninterrupted run of $end steps succeeds" test $status -eq 0
  check "$name: the resumed weights equal the uninterrupted run's" \
    cmp -s "$dir/$last/model.safetensors" "$tmp/$name-straight/$last/model.safetensors"
  check "$name: so does the training state" \
    cmp -s "$dir/$last/training_state.safetensors" "$tmp/$name-straight/$last/training_state.safetensors"
}

# One process; the second SIGTERM comes while a save is held (SYNCGRAD_TEST_SAVE_DELAY_MS) in its files.
dir="$tmp/single"
start single env SYNCGRAD_TEST_SAVE_DELAY_MS=1000 "$train" "${args[@]}" --max-steps 100000 --checkpoint-dir "$dir"
kill -TERM "$(cat "$tmp/single.pid")"
check "single: a save is under way after the first SIGTERM" wait_for 60 exists "$dir/step-*.tmp.*/training_state.safetensors"
kill -TERM "$(cat "$tmp/single.pid")"
stopped single "$dir"
resumes_exactly single "$dir" "$train"

dir="$tmp/usr1"
start usr1 "$train" "${args[@]}" --max-steps 100000 --checkpoint-dir "$dir"
kill -USR1 "$(cat "$tmp/usr1.pid")"
stopped usr1 "$dir"
check "usr1: rank 0 names the signal" grep -q "preempted (SIGUSR1)" "$tmp/usr1.log"

# Two ranks: the launcher forwards its SIGTERM to both.
ddp=("$launch" --nproc-per-node 2 "$train")
dir="$tmp/launcher"
start launcher "${ddp[@]}" "${args[@]}" --max-steps 100000 --checkpoint-dir "$dir"
kill -TERM "$(cat "$tmp/launcher.pid")"
stopped launcher "$dir"
resumes_exactly launcher "$dir" "${ddp[@]}"

# Two ranks: SIGUSR1 (sbatch --signal=USR1@60) to the launcher, which passes it on rather than stopping them.
dir="$tmp/launcher-usr1"
start launcher-usr1 "${ddp[@]}" "${args[@]}" --max-steps 100000 --checkpoint-dir "$dir"
kill -USR1 "$(cat "$tmp/launcher-usr1.pid")"
stopped launcher-usr1 "$dir"
check "launcher-usr1: the launcher passed it on" grep -q "syncgrad-launch: got SIGUSR1; passing it on to 2 ranks" \
  "$tmp/launcher-usr1.log"
check "launcher-usr1: rank 0 names the signal" grep -q "^\[rank0\]: syncgrad-train: preempted (SIGUSR1)" \
  "$tmp/launcher-usr1.log"

# Two ranks, only rank 1 signalled: rank 0 stops after the same step and saves it.
dir="$tmp/one-rank"
start one-rank "${ddp[@]}" "${args[@]}" --max-steps 100000 --checkpoint-dir "$dir"
rank1=$(rank_pid "$(cat "$tmp/one-rank.pid")" 1)
check "one-rank: rank 1's process found" test -n "$rank1"
kill -TERM "${rank1:-0}"
stopped one-rank "$dir"
check "one-rank: rank 0 says another rank was signalled" \
  grep -q "^\[rank0\]: syncgrad-train: preempted (a signal to another rank)" "$tmp/one-rank.log"
resumes_exactly one-rank "$dir" "${ddp[@]}"

# --checkpoint-every-minutes: rank 0's clock decides, both ranks save after the same step (a disagreement would
# leave one rank in the save's barrier), and the saves do not change the training. 0.0001 minutes (6 ms) have
# passed by the first step (the set-up takes longer), so at least one save falls inside the epoch.
dir="$tmp/minutes"
out=$("${ddp[@]}" "${args[@]}" --max-steps 20 --keep-checkpoints 0 --checkpoint-every-minutes 0.0001 \
  --checkpoint-dir "$dir" 2>&1); status=$?
check "minutes: a 2-rank run with --checkpoint-every-minutes succeeds" test $status -eq 0
check "minutes: it saved inside the epoch, on the clock" test "$(cd "$dir" && ls -d step-* | grep -vc step-000020)" -ge 1
out=$("${ddp[@]}" "${args[@]}" --max-steps 20 --checkpoint-dir "$tmp/minutes-straight" 2>&1)
check "minutes: its weights equal a run without them" \
  cmp -s "$dir/step-000020/model.safetensors" "$tmp/minutes-straight/step-000020/model.safetensors"

out=$("$train" "${args[@]}" --max-steps 4 --checkpoint-every-minutes 5 2>&1); status=$?
check "--checkpoint-every-minutes without --checkpoint-dir is refused" test $status -ne 0
check "naming the missing flag" grep -q "rank 0 has no --checkpoint-dir to save them in" <<<"$out"
finish
