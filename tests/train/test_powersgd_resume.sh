#!/usr/bin/env bash
# PowerSGD in checkpoints: a 2-rank run with --comm-hook powersgd (compressing from step 10) stopped at step 12
# and resumed to step 20 ends with the weights and training state of an uninterrupted 20-step run, bit for bit:
# each rank's error feedback and warm-start factors and the DDP step count are saved (comm_state.safetensors,
# gathered to rank 0) and restored. Also after a SIGTERM (preemption) at an unknown step.
# Usage: test_powersgd_resume.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../launch/common.sh"
tmp=$(mktemp -d); victim=""
cleanup() { if [ -n "$victim" ]; then kill -KILL "$victim" 2>/dev/null; fi; rm -rf "$tmp"; }
trap cleanup EXIT
for i in $(seq 100); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
args=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16" --batch-size 4
  --optimizer adamw --lr 0.01 --workers 1 --log-every 2 --epochs 1000 --comm-hook powersgd)
ddp=("$launch" --nproc-per-node 2 "$train")
same_as_straight() {  # same_as_straight name step: the resumed step directory equals the uninterrupted run's
  local last; last=$(printf 'step-%06d' "$2")
  if [ ! -d "$tmp/straight-$2" ]; then "${ddp[@]}" "${args[@]}" --max-steps "$2" --checkpoint-dir "$tmp/straight-$2" \
    >/dev/null 2>&1; fi
  local file
  for file in model.safetensors training_state.safetensors comm_state.safetensors; do
    check "$1: $file equals the uninterrupted run's" cmp -s "$tmp/$1/$last/$file" "$tmp/straight-$2/$last/$file"
  done
}

out=$("${ddp[@]}" "${args[@]}" --max-steps 12 --checkpoint-dir "$tmp/stopped" 2>&1); status=$?
check "a 2-rank PowerSGD run of 12 steps succeeds" test $status -eq 0
check "its checkpoint holds both ranks' PowerSGD state" \
  test "$(grep -ao 'rank[01]\.hook\.param[0-9]*\.error' "$tmp/stopped/step-000012/comm_state.safetensors" | sort -u |
    cut -d. -f1 | sort -u | wc -l)" = 2
out=$("${ddp[@]}" "${args[@]}" --max-steps 20 --resume auto --checkpoint-dir "$tmp/stopped" 2>&1); status=$?
check "--resume auto to step 20 succeeds" test $status -eq 0
same_as_straight stopped 20

# Preempted with SIGTERM to the launcher at whatever step it has reached after step 12.
"${ddp[@]}" "${args[@]}" --max-steps 100000 --checkpoint-dir "$tmp/preempted" >"$tmp/preempted.log" 2>&1 &
victim=$!
check "the run reached step 12" wait_for 120 grep -qs "step 12/" "$tmp/preempted.log"
kill -TERM $victim
wait $victim; status=$?; victim=""
check "it exited with status 75 (preempted)" test $status -eq 75
stop=$(sed -n 's/.*preempted (.*): stopped after step \([0-9]*\), saved .*/\1/p' "$tmp/preempted.log")
check "rank 0 said after which step it stopped" test -n "$stop"
stop=${stop:-12}
out=$("${ddp[@]}" "${args[@]}" --max-steps $((stop + 6)) --resume auto --checkpoint-dir "$tmp/preempted" 2>&1)
check "--resume auto after the preemption succeeds" test $? -eq 0
same_as_straight preempted $((stop + 6))
finish
