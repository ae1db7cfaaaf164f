#!/usr/bin/env bash
# syncgrad-train under syncgrad-launch with 2 ranks (DDP over gloo on 127.0.0.1): only rank 0 prints, logs and
# saves; the start-up line gives the global batch; N steps + save + resume + N steps equals 2N steps
# (model.safetensors byte for byte); --accumulate;
# --parallel dp in one process (and refused under the launcher);
# a bad --comm-hook; a rank killed mid-training makes the launcher exit non-zero naming it, quickly.
# Usage: test_ddp_cli.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch="$1"; train="$2"
. "$(dirname "$0")/../check.sh"
require_fashion_mnist
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run2() { "$launch" --nproc-per-node 2 "$train" --model mlp --workers 1 "$@"; }

out=$(run2 --max-steps 40 --log-every 20 --checkpoint-dir "$tmp/a" --log-file "$tmp/log.csv" 2>&1); status=$?
echo "$out" | tail -4
check "2-rank run succeeds" test $status -eq 0
check "it trains with DDP on 2 processes" grep -q "2 processes (DDP over gloo" <<<"$out"
check "the start-up line gives the batch per rank and the global batch" grep -q "batch 64 per rank, global 128" <<<"$out"
check "the progress line shows the exposed communication" grep -q "comm exposed" <<<"$out"
check "only rank 0 prints progress" test "$(grep -c '^\[rank1\]: epoch' <<<"$out")" -eq 0
check "rank 0 reports the result" grep -q '^\[rank0\]: done: 40 steps' <<<"$out"
check "rank 0 saved the checkpoint" test -s "$tmp/a/latest/model.safetensors"
check "the log has a header, 2 train rows and the final eval row" test "$(wc -l <"$tmp/log.csv")" -eq 4

out=$(run2 --max-steps 80 --log-every 40 --checkpoint-dir "$tmp/a" --resume "$tmp/a" 2>&1); status=$?
check "resumed 2-rank run succeeds" test $status -eq 0
check "it says where it resumed" grep -q "resumed from .* step 40" <<<"$out"
out=$(run2 --max-steps 80 --log-every 40 --checkpoint-dir "$tmp/b" 2>&1); status=$?
check "straight 80-step run succeeds" test $status -eq 0
check "40 + resume + 40 steps gives the weights of 80 steps" cmp -s "$tmp/a/latest/model.safetensors" "$tmp/b/latest/model.safetensors"

out=$(run2 --max-steps 10 --log-every 5 --accumulate 3 2>&1); status=$?
check "--accumulate 3 runs" test $status -eq 0
check "--accumulate is reported, in the global batch too" grep -q "batch 64 x 3 accumulated per rank, global 384" <<<"$out"

out=$(run2 --max-steps 5 --comm-hook zip 2>&1); status=$?
check "an unknown --comm-hook fails" test $status -ne 0
check "the unknown hook is named with the choices" grep -q 'unknown comm hook "zip"; choose allreduce, fp16' <<<"$out"

out=$("$train" --model mlp --parallel dp --dp-workers 2 --max-steps 10 --log-every 5 2>&1); status=$?
check "--parallel dp trains in one process" test $status -eq 0
check "--parallel dp is reported" grep -q "DataParallel over 2 worker threads" <<<"$out"
out=$(run2 --max-steps 5 --parallel dp 2>&1); status=$?
check "--parallel dp under the launcher is refused" test $status -ne 0
check "the refusal says why" grep -q "parallel dp runs in one process" <<<"$out"

# Kill rank 1 two seconds into a long run: the launcher stops rank 0 and exits with rank 1's status.
"$launch" --nproc-per-node 2 "$train" --model mlp --workers 1 --epochs 5 --log-every 50 >"$tmp/kill.log" 2>&1 &
launcher=$!
victim=""
for _ in $(seq 100); do
  for pid in $(pgrep -P "$launcher"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'RANK=1'; then victim=$pid; fi
  done
  [ -n "$victim" ] && grep -q "step 50/" "$tmp/kill.log" && break
  sleep 0.1
done
start=$(date +%s)
kill -9 "$victim"
wait "$launcher"; status=$?
elapsed=$(( $(date +%s) - start ))
tail -3 "$tmp/kill.log"
check "killing rank 1 makes the launcher fail" test $status -ne 0
check "the launcher names rank 1" grep -q "rank 1 (pid $victim)" "$tmp/kill.log"
check "the job ended within 30 s of the kill (took ${elapsed} s)" test $elapsed -lt 30
if [ $failures -eq 0 ]; then exit 0; else exit 1; fi
