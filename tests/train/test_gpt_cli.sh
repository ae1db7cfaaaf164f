#!/usr/bin/env bash
# syncgrad-train --model gpt and syncgrad-generate from the command line, on a small generated text: a short
# run with a checkpoint, --resume, text of the requested length from the checkpoint (reproducible per seed),
# the generator's errors, and a few steps of 2-rank DDP under syncgrad-launch.
# Usage: test_gpt_cli.sh path/to/syncgrad-launch path/to/syncgrad-train path/to/syncgrad-generate
set -u
launch="$1"; train="$2"; generate="$3"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
tiny="block_size=16,n_layer=1,n_head=2,n_embd=16"
gpt() { "$train" --model gpt --data-dir "$tmp/text" --model-config "$tiny" --batch-size 8 --optimizer adamw \
  --lr 0.01 --workers 1 "$@"; }

out=$(gpt --max-steps 10 --log-every 5 --checkpoint-dir "$tmp/ckpt" 2>&1); status=$?
echo "$out" | tail -3
check "a short GPT run succeeds" test $status -eq 0
check "its progress line counts tokens/s and shows the MFU" grep -q "tokens/s .*MFU" <<<"$out"
check "it ends with the validation loss" grep -q "^done: 10 steps.*validation loss" <<<"$out"
check "it saved a checkpoint" test -s "$tmp/ckpt/latest/model.safetensors"

out=$(gpt --max-steps 20 --log-every 5 --checkpoint-dir "$tmp/ckpt" --resume "$tmp/ckpt" 2>&1); status=$?
check "--resume continues the run" test $status -eq 0
check "it says where it resumed" grep -q "resumed from .* step 10" <<<"$out"

"$generate" --checkpoint "$tmp/ckpt" --prompt "a rolling" --max-new-tokens 40 --seed 3 >"$tmp/gen1"; status=$?
check "syncgrad-generate runs on the checkpoint" test $status -eq 0
check "it prints the prompt, 40 new bytes and a newline" test "$(wc -c <"$tmp/gen1")" -eq $((9 + 40 + 1))
"$generate" --checkpoint "$tmp/ckpt/latest/model.safetensors" --prompt "a rolling" --max-new-tokens 40 --seed 3 >"$tmp/gen2"
check "the same seed gives the same text (weights file given directly)" cmp -s "$tmp/gen1" "$tmp/gen2"
out=$("$generate" --checkpoint "$tmp/ckpt" --temperature 0 2>&1); status=$?
check "temperature 0 is refused" test $status -ne 0
check "the refusal names the temperature" grep -q "temperature must be a positive number" <<<"$out"
out=$("$generate" --checkpoint "$tmp/nothing-here" 2>&1); status=$?
check "a missing checkpoint is refused" test $status -ne 0
check "the refusal names the path" grep -q "nothing-here\" does not exist" <<<"$out"
out=$("$generate" --checkpoint "$tmp/ckpt" --model-config "n_layer=2" 2>&1); status=$?
check "sizes that do not fit the weights are refused" test $status -ne 0
check "the refusal says to pass the run's --model-config" grep -q "pass the run's --model-config" <<<"$out"
cp "$tmp/ckpt/latest/model.safetensors" "$tmp/other.safetensors"
python3 - "$tmp/other.safetensors" <<'EOF'
import json, struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header["__metadata__"]["model"] = "cnn"
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
EOF
out=$("$generate" --checkpoint "$tmp/other.safetensors" 2>&1); status=$?
check "a checkpoint of another model is refused" test $status -ne 0
check "the refusal names that model" grep -q 'holds a "cnn" model' <<<"$out"

out=$("$launch" --nproc-per-node 2 "$train" --model gpt --data-dir "$tmp/text" --model-config "$tiny" \
  --batch-size 4 --optimizer adamw --lr 0.01 --workers 1 --max-steps 6 --log-every 3 2>&1); status=$?
echo "$out" | tail -2
check "2-rank DDP GPT training succeeds" test $status -eq 0
check "it runs as DDP over 2 processes" grep -q "2 processes (DDP over gloo" <<<"$out"
check "rank 0 reports the validation loss" grep -q '^\[rank0\]: done: 6 steps.*validation loss' <<<"$out"

echo "$failures check(s) failed"
test "$failures" -eq 0
