#!/usr/bin/env bash
# Bad inputs to syncgrad-train, syncgrad-generate and syncgrad-bench get a clear refusal naming the value and what is allowed:
# numeric options out of range (readable ranges, not CLI11's 309-digit bound), --workers beyond the cap, an
# endless text file (/dev/zero), a training set of 0 images, and malformed JSON in a checkpoint's metadata
# (naming the file and the field).
# Usage: test_bad_inputs.sh path/to/syncgrad-train path/to/syncgrad-generate path/to/syncgrad-bench
set -u
train="$1"; generate="$2"; bench="$3"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

refused() {  # refused "description" "expected text" command...
  local what="$1" expected="$2"; shift 2
  local out status
  out=$("$@" 2>&1); status=$?
  check "$what is refused" test $status -ne 0
  if ! grep -qF -- "$expected" <<<"$out"; then echo "$out" | head -5; fi
  check "$what: the refusal says \"$expected\"" grep -qF -- "$expected" <<<"$out"
  if [ -n "${short:-}" ]; then check "$what: the refusal is short (no 309-digit bound)" test "${#out}" -lt 200; fi
}

short=1
refused "--workers 100000" "--workers: 100000 is out of range: use a whole number from 0 to 256" \
  "$train" --workers 100000
refused "--epochs 0" "--epochs: 0 is out of range: use a whole number from 1 to 2147483647" "$train" --epochs 0
refused "--batch-size 0" "--batch-size: 0 is not allowed: use a whole number of at least 1" "$train" --batch-size 0
refused "--lr -1" "--lr: -1 is not allowed: use a finite number of at least 0" "$train" --lr -1
refused "--lr nan" "--lr: nan is not allowed: use a finite number of at least 0" "$train" --lr nan
refused "--max-steps -5" "--max-steps: -5 is not allowed: use a whole number of at least 0" "$train" --max-steps -5
refused "--keep-checkpoints -1" "--keep-checkpoints: -1 is out of range: use a whole number from 0 to" \
  "$train" --keep-checkpoints -1
refused "--dp-workers 100000" "--dp-workers: 100000 is out of range: use a whole number from 1 to 256" \
  "$train" --dp-workers 100000
refused "generate --top-k -1" "--top-k: -1 is not allowed: use a whole number of at least 0" \
  "$generate" --checkpoint "$tmp" --top-k -1
refused "syncgrad-bench scaling --steps 0" "--steps: 0 is not allowed: use a whole number of at least 1" \
  "$bench" scaling --steps 0
refused "syncgrad-bench ddp --bucket-cap-mb 0" "--bucket-cap-mb: 0 is not allowed: use a finite number above 0" \
  "$bench" ddp --bucket-cap-mb 0
short=""

if [ -e /dev/zero ]; then
  refused "/dev/zero as the text" '"/dev/zero" gave more than 268435456 bytes and did not end' \
    "$train" --model gpt --data-dir /dev/zero
fi

mkdir "$tmp/empty-mnist"
python3 - "$tmp/empty-mnist" <<'EOF_PY'
import gzip, struct, sys
for split in ("train", "t10k"):
    with gzip.open(f"{sys.argv[1]}/{split}-images-idx3-ubyte.gz", "wb") as f: f.write(struct.pack(">IIII", 0x803, 0, 28, 28))
    with gzip.open(f"{sys.argv[1]}/{split}-labels-idx1-ubyte.gz", "wb") as f: f.write(struct.pack(">II", 0x801, 0))
EOF_PY
refused "a training set of 0 images" "$tmp/empty-mnist/train-images-idx3-ubyte.gz' holds 0 images" \
  "$train" --model mlp --data-dir "$tmp/empty-mnist"

# Malformed JSON in the metadata of a checkpoint (its manifest updated to match, as a tool that edits it would).
for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
gpt=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16" --batch-size 8
  --workers 0)
refused "--resume auto without --checkpoint-dir" "--resume auto picks the newest checkpoint of --checkpoint-dir" \
  "$train" "${gpt[@]}" --resume auto
"$train" "${gpt[@]}" --max-steps 2 --checkpoint-dir "$tmp/ckpt" >/dev/null 2>&1
check "a short GPT run saved a checkpoint" test -s "$tmp/ckpt/step-000002/training_state.safetensors"
cp -r "$tmp/ckpt" "$tmp/bad-config"
cp -r "$tmp/ckpt" "$tmp/bad-groups"
spoil() {  # spoil DIR FIELD: replaces the metadata field FIELD of DIR/step-000002/training_state.safetensors
  python3 - "$1/step-000002" "$2" <<'EOF_PY'
import json, struct, sys, zlib
step, field = sys.argv[1], sys.argv[2]
path = f"{step}/training_state.safetensors"
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header["__metadata__"][field] = '{"lr": 0.1,'
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
data = struct.pack("<Q", len(text)) + text + data[8 + n:]
open(path, "wb").write(data)
manifest = json.load(open(f"{step}/manifest.json"))
for f in manifest["files"]:
    if f["name"] == "training_state.safetensors":
        f["bytes"], f["crc32"] = len(data), "%08x" % zlib.crc32(data)
json.dump(manifest, open(f"{step}/manifest.json", "w"))
EOF_PY
}
spoil "$tmp/bad-config" config
spoil "$tmp/bad-groups" optimizer_groups
refused "generate on a checkpoint whose config is not JSON" \
  "checkpoint $tmp/bad-config/step-000002/training_state.safetensors: metadata field \"config\" is not the JSON" \
  "$generate" --checkpoint "$tmp/bad-config"
refused "--resume of a checkpoint whose optimizer_groups is not JSON" \
  "checkpoint $tmp/bad-groups/step-000002/training_state.safetensors: metadata field \"optimizer_groups\" is not" \
  "$train" "${gpt[@]}" --max-steps 4 --resume "$tmp/bad-groups"
finish
