#!/usr/bin/env bash
# Checkpoints survive a kill -9 in the middle of a save: one directory per step (step-NNNNNN/ with a manifest,
# renamed into place when complete). A run killed while saving step 12 (SYNCGRAD_TEST_SAVE_DELAY_MS holds the
# save after its files are written) leaves step 8 as the newest complete checkpoint, and syncgrad-generate
# reads it; the next run removes the debris, resumes from step 8 and ends with the weights of an uninterrupted
# run, keeping --keep-checkpoints of them. A truncated newest checkpoint, or one without its manifest, is
# skipped by --resume auto with a warning naming the file, and saving that step again replaces it.
# Usage: test_checkpoint_crash.sh path/to/syncgrad-train path/to/syncgrad-generate
set -u
train="$1"; generate="$2"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d)
victim=""
cleanup() { if [ -n "$victim" ]; then kill -KILL "$victim" 2>/dev/null; fi; rm -rf "$tmp"; }
trap cleanup EXIT
for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
args=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16" --batch-size 8
  --optimizer adamw --lr 0.01 --workers 1 --log-every 4 --checkpoint-every 4)
gpt() { "$train" "${args[@]}" "$@"; }
exists() { compgen -G "$1" >/dev/null; }
run="$tmp/run"

out=$(gpt --max-steps 24 --checkpoint-dir "$tmp/straight" 2>&1); status=$?
check "an uninterrupted run of 24 steps succeeds" test $status -eq 0
check "it kept the newest 2 checkpoints" test "$(cd "$tmp/straight" && echo step-*)" = "step-000020 step-000024"
check "latest points at the newest" test "$(readlink "$tmp/straight/latest")" = step-000024
check "each checkpoint lists its files in a manifest" grep -q '"name": "training_state.safetensors"' \
  "$tmp/straight/step-000024/manifest.json"

out=$(gpt --max-steps 8 --checkpoint-dir "$run" 2>&1); status=$?
check "a first run of 8 steps succeeds" test $status -eq 0

# The second run is held in its save of step 12 and killed there.
SYNCGRAD_TEST_SAVE_DELAY_MS=600000 "$train" "${args[@]}" --max-steps 24 --resume auto --checkpoint-dir "$run" >"$tmp/killed.log" 2>&1 &
victim=$!
for _ in $(seq 1 1200); do
  if exists "$run/step-000012.tmp.*/training_state.safetensors" || ! kill -0 "$victim" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
check "the second run got into its save of step 12" exists "$run/step-000012.tmp.*/model.safetensors"
kill -KILL "$victim"; wait "$victim" 2>/dev/null; victim=""
check "the killed save left its temporary directory" exists "$run/step-000012.tmp.*"
check "no step-000012 appeared" test ! -e "$run/step-000012"
check "latest still points at step 8" test "$(readlink "$run/latest")" = step-000008
touch "$run/model.safetensors.tmp.99999.0"  # what a save of the older layout left when killed

"$generate" --checkpoint "$run" --prompt "a rolling" --max-new-tokens 30 --seed 3 >"$tmp/gen-dir" 2>&1; status=$?
check "syncgrad-generate reads the directory after the kill" test $status -eq 0
"$generate" --checkpoint "$run/step-000008" --prompt "a rolling" --max-new-tokens 30 --seed 3 >"$tmp/gen-8" 2>&1
check "it read step 8, the newest complete checkpoint" cmp -s "$tmp/gen-dir" "$tmp/gen-8"

out=$(gpt --max-steps 24 --resume auto --checkpoint-dir "$run" 2>&1); status=$?
echo "$out" | grep -v '^epoch'
check "the next run succeeds" test $status -eq 0
check "it resumed from step 8" grep -q "resumed from $run/step-000008 at epoch 1, step 8" <<<"$out"
check "it removed the killed save's debris" test -z "$(cd "$run" && compgen -G '*.tmp.*')"
check "it kept the newest 2 checkpoints" test "$(cd "$run" && echo step-*)" = "step-000020 step-000024"
check "its weights equal the uninterrupted run's" cmp -s "$run/step-000024/model.safetensors" \
  "$tmp/straight/step-000024/model.safetensors"
check "so does its training state" cmp -s "$run/step-000024/training_state.safetensors" \
  "$tmp/straight/step-000024/training_state.safetensors"

# A damaged newest checkpoint is skipped, with the file and the reason named; saving its step replaces it.
truncate -s 1000 "$run/step-000024/model.safetensors"
out=$(gpt --max-steps 24 --resume auto --checkpoint-dir "$run" 2>&1); status=$?
check "a run after the newest checkpoint was truncated succeeds" test $status -eq 0
check "it warns naming the truncated file" \
  grep -q "warning: skipping checkpoint: $run/step-000024/model.safetensors: 1000 bytes, the manifest says" <<<"$out"
check "it resumed from the previous checkpoint" grep -q "resumed from $run/step-000020 at epoch 1, step 20" <<<"$out"
check "the new step 24 replaced the damaged one" cmp -s "$run/step-000024/model.safetensors" \
  "$tmp/straight/step-000024/model.safetensors"
rm "$run/step-000024/manifest.json"
out=$(gpt --max-steps 24 --resume "$run" 2>&1); status=$?
check "a newest checkpoint without its manifest is skipped" \
  grep -q "warning: skipping checkpoint: $run/step-000024/manifest.json: missing" <<<"$out"
check "and the previous one is used" grep -q "resumed from $run/step-000020" <<<"$out"
out=$(gpt --max-steps 24 --resume "$run/step-000024" 2>&1); status=$?
check "naming the incomplete checkpoint itself is refused" test $status -ne 0
check "the refusal names the missing manifest" grep -q "step-000024/manifest.json: missing" <<<"$out"

out=$(gpt --max-steps 4 --resume auto --checkpoint-dir "$tmp/empty" 2>&1); status=$?
check "--resume auto on an empty directory starts from the beginning" test $status -eq 0
check "and says so" grep -q "no checkpoint in $tmp/empty yet; starting from the beginning" <<<"$out"
finish
