#!/usr/bin/env bash
# A checkpoint directory of the older layout (model.safetensors and checkpoint.safetensors at its top, built
# here from a step directory as the older syncgrad-train wrote it) still resumes, with a note naming the layout,
# and continues exactly; syncgrad-generate reads it; a directory holding no checkpoint is refused naming the
# layouts it could have.
# Usage: test_checkpoint_legacy.sh path/to/syncgrad-train path/to/syncgrad-generate
set -u
train="$1"; generate="$2"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
args=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16" --batch-size 8
  --optimizer adamw --lr 0.01 --workers 1 --checkpoint-every 6)
"$train" "${args[@]}" --max-steps 12 --checkpoint-dir "$tmp/straight" >/dev/null 2>&1
check "a run of 12 steps saved steps 6 and 12" test -d "$tmp/straight/step-000006" -a -d "$tmp/straight/step-000012"

mkdir "$tmp/old"
python3 - "$tmp/straight/step-000006" "$tmp/old" <<'EOF_PY'
import json, struct, sys
step, old = sys.argv[1], sys.argv[2]
def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]
def write(path, header, body):
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + body)
model, model_body = read(f"{step}/model.safetensors")
state, state_body = read(f"{step}/training_state.safetensors")
write(f"{old}/model.safetensors", model, model_body)
meta = state.pop("__metadata__")
meta["format"] = "syncgrad-checkpoint/1"
header, body = {"__metadata__": meta}, b""
for prefix, tensors, data in (("model.", model, model_body), ("", state, state_body)):
    for name, info in sorted(tensors.items(), key=lambda kv: kv[1].get("data_offsets", [0])[0] if kv[0] != "__metadata__" else -1):
        if name == "__metadata__": continue
        begin, end = info["data_offsets"]
        header[prefix + name] = {"dtype": info["dtype"], "shape": info["shape"], "data_offsets": [len(body), len(body) + end - begin]}
        body += data[begin:end]
write(f"{old}/checkpoint.safetensors", header, body)
EOF_PY
out=$("$train" "${args[@]}" --max-steps 12 --resume "$tmp/old" --checkpoint-dir "$tmp/resumed" 2>&1); status=$?
check "a checkpoint of the older layout resumes" test $status -eq 0
check "with a note naming the layout" grep -q "note: $tmp/old has the older checkpoint layout (model.safetensors and checkpoint.safetensors at its top)" <<<"$out"
check "at its step" grep -q "resumed from $tmp/old at epoch 1, step 6" <<<"$out"
check "and continues exactly" cmp -s "$tmp/resumed/step-000012/model.safetensors" "$tmp/straight/step-000012/model.safetensors"
"$generate" --checkpoint "$tmp/old" --max-new-tokens 20 --seed 1 >"$tmp/gen-old" 2>&1; status=$?
"$generate" --checkpoint "$tmp/straight/step-000006" --max-new-tokens 20 --seed 1 >"$tmp/gen-new" 2>&1
check "syncgrad-generate reads the older layout" test $status -eq 0
check "the same weights as its step directory" cmp -s "$tmp/gen-old" "$tmp/gen-new"

mkdir "$tmp/nothing"
out=$("$train" "${args[@]}" --max-steps 12 --resume "$tmp/nothing" 2>&1); status=$?
check "a directory without a checkpoint is refused" test $status -ne 0
check "naming the layouts expected" grep -q "$tmp/nothing holds no checkpoint: expected the step-NNNNNN/ directories" <<<"$out"
finish
