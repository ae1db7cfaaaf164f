#!/usr/bin/env bash
# Fault injection: a 2-rank syncgrad-train job (MLP, then CNN; Gloo on 127.0.0.1) under syncgrad-launch
# --max-restarts 3 with --resume auto loses a rank to kill -9 three times, on a random schedule: twice a random
# rank after 3 to 8 of its attempt's progress lines (past the attempt's first checkpoint), once rank 0 (the only
# writer) inside a checkpoint write (that attempt's saves are held 400 ms by SYNCGRAD_TEST_SAVE_DELAY_MS, and the
# kill comes as soon as the save's temporary step directory appears). Each restart resumes from the newest
# complete checkpoint; the job completes, and its final weights and training state equal, bit for bit, those of
# an uninterrupted run with the same seed and world size. Given the emulated CUDA module with its NCCL stand-in
# (third argument; the stand-in's ranks are threads of one process, so that job has one rank), the same schedule
# runs the MLP on the NCCL path instead: --device cuda --parallel ddp --backend nccl. The schedule's seed is printed;
# SYNCGRAD_TEST_FAULT_SEED=N replays it. The data are small subsets of Fashion-MNIST.
# Usage: test_fault_injection.sh path/to/syncgrad-launch path/to/syncgrad-train [libsyncgrad_cuda_nccl_emulated.so]
set -u
launch=$(realpath "$1"); train=$(realpath "$2"); nccl_module="${3:-}"
. "$(dirname "$0")/../launch/common.sh"
src="${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}"
if ! ls "$src"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "skipped: Fashion-MNIST is not installed (dataset-fashion-mnist, or SYNCGRAD_DATA_DIR)"; exit 77
fi
seed="${SYNCGRAD_TEST_FAULT_SEED:-$(( $(date +%s%N) / 1000 % 32768 ))}"
if ! [[ "$seed" =~ ^[0-9]+$ ]]; then echo "SYNCGRAD_TEST_FAULT_SEED=$seed: expected a whole number"; exit 1; fi
echo "fault schedule seed $seed (replay it with SYNCGRAD_TEST_FAULT_SEED=$seed)"
RANDOM=$seed
pick() { picked=$(( (RANDOM >> 6) % $1 )); }  # picked = 0..n-1 (bash's low bits are poor)
tmp=$(mktemp -d)
job=""
cleanup() {  # KEEP=1 keeps the files for a look after a failure
  if [ -n "$job" ]; then kill -TERM "$job" 2>/dev/null; wait "$job" 2>/dev/null; fi
  if [ -z "${KEEP:-}" ]; then rm -rf "$tmp"; else echo "kept $tmp"; fi
}
trap cleanup EXIT

be32() {  # be32 n: printf's escapes for n as 4 big-endian bytes
  printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255))
}
subset() {  # subset name count item_bytes: the first count items of an IDX file of Fashion-MNIST, uncompressed
  local from; from=$(ls "$src/$1"* | head -n 1)
  local header=$(( $3 == 1 ? 8 : 16 ))
  { zcat -f "$from" | head -c 4; printf "$(be32 "$2")"; zcat -f "$from" | head -c "$header" | tail -c +9
    zcat -f "$from" | tail -c +$((header + 1)) | head -c $(($2 * $3)); } >"$tmp/data/$1"
}
mkdir "$tmp/data"
subset train-images-idx3-ubyte 8192 784; subset train-labels-idx1-ubyte 8192 1
subset t10k-images-idx3-ubyte 256 784; subset t10k-labels-idx1-ubyte 256 1

# The rank wrapper records each attempt's pids and the newest complete checkpoint when it starts (the previous
# attempt's ranks have all ended; a step directory under its final name is complete, and `latest` may lag behind
# it when the kill came between the rename and the link), and holds the saves of the attempt whose kill lands in
# a write.
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
ls -d "\$FAULT_CHECKPOINT_DIR"/step-* 2>/dev/null | grep -E '/step-[0-9]+\$' | sort | tail -n 1 \\
  >"$tmp/pids/\$SYNCGRAD_RESTART_COUNT.newest"
echo \$\$ >"$tmp/pids/\$SYNCGRAD_RESTART_COUNT.\$RANK"
if [ "\$SYNCGRAD_RESTART_COUNT" = "\$(cat "$tmp/write_attempt")" ]; then export SYNCGRAD_TEST_SAVE_DELAY_MS=400; fi
exec "\$@"
EOF
chmod +x "$tmp/rank.sh"

at_least_progress_lines() {  # at_least_progress_lines n offset: rank 0 printed n progress lines after offset
  [ "$(tail -c +$(($2 + 1)) "$tmp/job.log" | grep -c '^\[rank0\]: epoch .* step ')" -ge "$1" ]
}
last_step_since() {  # the step of rank 0's last progress line after offset
  tail -c +$(($1 + 1)) "$tmp/job.log" | grep -o '^\[rank0\]: epoch .* step [0-9]*' | tail -n 1 | grep -o '[0-9]*$'
}
exists() { compgen -G "$1" >/dev/null; }
all_started() {  # all_started attempt ranks: every rank of the attempt has written its pid
  local r
  for r in $(seq 0 $(($2 - 1))); do [ -s "$tmp/pids/$1.$r" ] || return 1; done
}
said() { grep -qF -- "$1" <<<"$2" || { echo "  expected '$1', got '$2'"; return 1; }; }
ended() { ! kill -0 "$job" 2>/dev/null; }
# until_or_ended seconds command...: true once command succeeds; false when the job ended first or time is up.
until_or_ended() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    if ended || [ $SECONDS -ge $deadline ]; then return 1; fi
    sleep 0.02
  done
}

# run_with_faults name ranks args...: the job under --max-restarts 3 with three kills, then the uninterrupted run.
run_with_faults() {
  local name="$1" ranks="$2"; shift 2
  local dir="$tmp/$name" write_attempt attempt rank lines offset pid landed picked
  pick 3; write_attempt=$picked
  rm -rf "$tmp/pids"; mkdir "$tmp/pids"; echo "$write_attempt" >"$tmp/write_attempt"
  FAULT_CHECKPOINT_DIR="$dir" "$launch" --nproc-per-node "$ranks" --max-restarts 3 "$tmp/rank.sh" "$train" "$@" \
    --resume auto --checkpoint-dir "$dir" >"$tmp/job.log" 2>&1 &
  job=$!
  for attempt in 0 1 2; do
    if ! until_or_ended 120 all_started "$attempt" "$ranks"; then
      echo "$name: attempt $attempt never started"; tail -n 20 "$tmp/job.log"; break
    fi
    offset=$(wc -c <"$tmp/job.log")
    if [ "$attempt" = "$write_attempt" ]; then
      pid=$(cat "$tmp/pids/$attempt.0")
      if ! until_or_ended 120 exists "$dir/step-*.tmp.$pid.*"; then
        echo "$name: attempt $attempt never saved"; tail -n 20 "$tmp/job.log"; break
      fi
      kill -KILL "$pid"
      landed=$(cd "$dir" && compgen -G "step-*.tmp.$pid.*" | head -n 1)
      local what="rank 0 killed -9 inside its write of ${landed%%.tmp.*} (its temporary directory stayed)"
      check "$name, attempt $attempt: $what" test -n "$landed"
    else
      pick "$ranks"; rank=$picked
      pick 6; lines=$((picked + 3))
      if ! until_or_ended 120 at_least_progress_lines "$lines" "$offset"; then
        echo "$name: attempt $attempt ended before its progress line $lines"; break
      fi
      pid=$(cat "$tmp/pids/$attempt.$rank")
      kill -KILL "$pid"
      echo "$name, attempt $attempt: rank $rank killed -9 after progress line $lines" \
        "(step $(last_step_since "$offset"))"
    fi
  done
  wait "$job"; local status=$?; job=""
  grep -v '^\[rank.\]: epoch' "$tmp/job.log" | tail -n 12
  check "$name: the job completes (status 0) after three kills" test $status -eq 0
  check "$name: three restarts, each announced" \
    test "$(grep -c 'restarting all ranks (restart [123] of 3)' "$tmp/job.log")" -eq 3
  local starts; starts=$(grep -E '^\[rank0\]: (resumed from|--resume auto: no checkpoint)' "$tmp/job.log")
  for attempt in 1 2 3; do
    local newest; newest=$(cat "$tmp/pids/$attempt.newest" 2>/dev/null)
    local want="--resume auto: no checkpoint in $dir yet"
    if [ -n "$newest" ]; then want="resumed from $newest at"; newest=${newest##*/}; fi
    local what="began again (no checkpoint yet)"
    if [ -n "$newest" ]; then what="resumed from the newest complete checkpoint, $newest"; fi
    check "$name, attempt $attempt: $what" \
      said "[rank0]: $want" "$(sed -n "$((attempt + 1))p" <<<"$starts")"
  done
  check "$name: the restarts after the two kills between saves resumed from checkpoints" \
    test "$(grep -c "^\[rank0\]: resumed from $dir/step-" "$tmp/job.log")" -ge 2
  "$launch" --nproc-per-node "$ranks" "$train" "$@" --checkpoint-dir "$tmp/$name-straight" >"$tmp/straight.log" 2>&1
  check "$name: the uninterrupted run succeeds" test $? -eq 0
  local final; final=$(readlink "$tmp/$name-straight/latest")
  check "$name: the job's final weights equal the uninterrupted run's, bit for bit ($final)" \
    cmp "$dir/$final/model.safetensors" "$tmp/$name-straight/$final/model.safetensors"
  check "$name: so does its final training state" \
    cmp "$dir/$final/training_state.safetensors" "$tmp/$name-straight/$final/training_state.safetensors"
  check "$name: no debris of the killed saves is left" test -z "$(cd "$dir" && compgen -G '*.tmp.*')"
}

common=(--data-dir "$tmp/data" --epochs 100 --workers 1 --keep-checkpoints 2)
# A kill after progress line 3..8 of an attempt comes after that attempt's first checkpoint is complete.
if [ -z "$nccl_module" ]; then
  run_with_faults mlp 2 --model mlp "${common[@]}" --max-steps 300 --checkpoint-every 10 --log-every 5
  run_with_faults cnn 2 --model cnn "${common[@]}" --batch-size 16 --max-steps 48 --checkpoint-every 2 --log-every 1
else
  export SYNCGRAD_CUDA_MODULE="$nccl_module" SYNCGRAD_FAKE_CUDA_DEVICES=1
  run_with_faults mlp-nccl 1 --model mlp "${common[@]}" --device cuda --parallel ddp --backend nccl \
    --batch-size 16 --max-steps 40 --checkpoint-every 2 --log-every 1
fi
finish
