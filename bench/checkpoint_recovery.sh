#!/usr/bin/env bash
# Time from a rank's death to training again, on one node: a 2-rank syncgrad-train job under syncgrad-launch
# --max-restarts 1 --resume auto (Gloo on 127.0.0.1) loses rank 1 to kill -9 once it has saved a checkpoint and
# trained a few steps past it. Every line of the job's output is stamped as it arrives (the ranks' stdout is
# line-buffered with stdbuf -oL; the rank wrapper stamps its own start), which splits the recovery into:
#   detect   the kill -> the launcher's "rank 1 ... was killed ...; stopping the other 1 rank" line
#   stop     -> "restarting all ranks" (the other rank stopped: SIGTERM, its PeerError, exit)
#   spawn    -> the restarted rank 0's first instruction (the wrapper's stamp)
#   resume   -> "resumed from ..." (rendezvous, data, model, the checkpoint's check and load)
#   step     -> the first progress line after it (DDP set-up, loader, the first step; --log-every 1)
# REPS times; prints each and the median of the total.
# Usage: bench/checkpoint_recovery.sh [BUILD_DIR]   (default ./build)
# Settings (environment): MODEL=cnn BATCH=64 EVERY=20 REPS=3 DIR=$TMPDIR-or-/tmp
set -euo pipefail
build="${1:-build}"
launch=$(realpath "$build/tools/syncgrad-launch"); train=$(realpath "$build/tools/syncgrad-train")
model="${MODEL:-cnn}" batch="${BATCH:-64}" every="${EVERY:-20}" reps="${REPS:-3}"
work=$(mktemp -d "${DIR:-${TMPDIR:-/tmp}}/checkpoint-recovery.XXXXXX")
trap 'rm -rf "$work"' EXIT

cat >"$work/rank.sh" <<EOF
#!/usr/bin/env bash
echo \$\$ >"$work/pid.\$SYNCGRAD_RESTART_COUNT.\$RANK"
echo "\$EPOCHREALTIME rank \$RANK start, attempt \$SYNCGRAD_RESTART_COUNT" >>"$work/starts"
exec stdbuf -oL "\$@"
EOF
chmod +x "$work/rank.sh"

stamp_of() {  # stamp_of pattern: the stamp of the first line of the log matching pattern (after the kill)
  awk -v kill="$1" -v pattern="$2" '$1 >= kill && $0 ~ pattern {print $1; exit}' "$work/log"
}
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", 1000 * (b - a) }'; }

echo "recovery: $model, 2 ranks (DDP over Gloo), batch $batch per rank, --checkpoint-every $every, kill -9 of rank 1;" \
  "$(date -u +%FT%TZ), $(nproc) cores"
printf '%-4s %9s %9s %9s %9s %9s %10s\n' rep "detect" "stop" "spawn" "resume" "step" "total (ms)"
totals=()
for rep in $(seq "$reps"); do
  rm -rf "$work/ckpt" "$work"/pid.* "$work/starts"
  "$launch" --nproc-per-node 2 --max-restarts 1 "$work/rank.sh" "$train" --model "$model" --batch-size "$batch" \
    --workers 1 --log-every 1 --max-steps $((every * 3)) --checkpoint-every "$every" --resume auto \
    --checkpoint-dir "$work/ckpt" 2>&1 | while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done >"$work/log" &
  job=$!
  until [ -f "$work/ckpt/step-$(printf %06d "$every")/manifest.json" ] &&
        grep -q "step $((every + 3))/" "$work/log"; do sleep 0.01; done
  kill_stamp=$EPOCHREALTIME
  kill -KILL "$(cat "$work/pid.0.1")"
  wait "$job"
  detect=$(stamp_of "$kill_stamp" "stopping the other 1 rank")
  stopped=$(stamp_of "$kill_stamp" "restarting all ranks")
  spawned=$(awk '/rank 0 start, attempt 1/ {print $1}' "$work/starts")
  resumed=$(stamp_of "$kill_stamp" "\\[rank0\\]: resumed from")
  stepped=$(awk -v after="$resumed" '$1 >= after && /\[rank0\]: epoch .* step / {print $1; exit}' "$work/log")
  total=$(ms "$kill_stamp" "$stepped")
  totals+=("$total")
  printf '%-4s %9s %9s %9s %9s %9s %10s\n' "$rep" "$(ms "$kill_stamp" "$detect")" "$(ms "$detect" "$stopped")" \
    "$(ms "$stopped" "$spawned")" "$(ms "$spawned" "$resumed")" "$(ms "$resumed" "$stepped")" "$total"
done
median=$(printf '%s\n' "${totals[@]}" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
echo "median from the kill to training again: $median ms (target < 10 s)"
