#!/usr/bin/env bash
# Checkpoints of a 2-rank DDP run (syncgrad-launch, Gloo on 127.0.0.1): rank 0 saves step directories,
# --resume auto continues both ranks from the newest, and ranks that would resume from different steps are
# refused on every rank, naming both steps. With 4 ranks and two buckets (the CNN), a resumed run ends with the
# weights of an uninterrupted one, bit for bit: its DDP adopts the bucket order the saved run had rebuilt.
# Usage: test_checkpoint_ddp.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../check.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
args=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16" --batch-size 4
  --optimizer adamw --lr 0.01 --workers 1 --log-every 4 --checkpoint-every 4)
dir="$tmp/ckpt"

out=$("$launch" --nproc-per-node 2 "$train" "${args[@]}" --max-steps 8 --checkpoint-dir "$dir" 2>&1); status=$?
check "a 2-rank run with checkpoints succeeds" test $status -eq 0
check "rank 0 saved steps 4 and 8" test -f "$dir/step-000004/manifest.json" -a -f "$dir/step-000008/manifest.json"

out=$("$launch" --nproc-per-node 2 "$train" "${args[@]}" --max-steps 12 --resume auto --checkpoint-dir "$dir" 2>&1)
status=$?
echo "$out" | grep -v "step " | tail -4
check "--resume auto continues both ranks" test $status -eq 0
check "from the newest checkpoint" grep -q "^\[rank0\]: resumed from $dir/step-000008 at epoch 1, step 8" <<<"$out"
check "and saves step 12" test -f "$dir/step-000012/manifest.json"

# 4 ranks: sums of 4 depend on their order, which depends on a gradient's place in its bucket.
cnn=(--model cnn --batch-size 8 --workers 1 --log-every 100 --checkpoint-every 3)
"$launch" --nproc-per-node 4 "$train" "${cnn[@]}" --max-steps 6 --checkpoint-dir "$tmp/whole" >/dev/null 2>&1
check "a 4-rank CNN run of 6 steps succeeds" test -f "$tmp/whole/step-000006/manifest.json"
"$launch" --nproc-per-node 4 "$train" "${cnn[@]}" --max-steps 3 --checkpoint-dir "$tmp/split" >/dev/null 2>&1
"$launch" --nproc-per-node 4 "$train" "${cnn[@]}" --max-steps 6 --checkpoint-dir "$tmp/split" --resume auto \
  >/dev/null 2>&1
check "stopped at step 3 and resumed, it saves step 6" test -f "$tmp/split/step-000006/manifest.json"
check "with the uninterrupted run's weights, bit for bit" \
  cmp "$tmp/whole/step-000006/model.safetensors" "$tmp/split/step-000006/model.safetensors"

# Each rank given another step directory (as ranks on nodes without a shared --checkpoint-dir would find).
cat >"$tmp/per-rank-resume" <<EOF_SH
#!/usr/bin/env bash
if [ "\$RANK" = 0 ]; then step=step-000008; else step=step-000012; fi
exec "$train" "\$@" --resume "$dir/\$step"
EOF_SH
chmod +x "$tmp/per-rank-resume"
out=$("$launch" --nproc-per-node 2 "$tmp/per-rank-resume" "${args[@]}" --max-steps 16 2>&1); status=$?
echo "$out" | tail -3
check "ranks resuming from different steps are refused" test $status -ne 0
check "the refusal names both steps" grep -q "resumed state: the ranks disagree: rank 1 has resumed at step 12, rank 0 has 8" <<<"$out"
finish
