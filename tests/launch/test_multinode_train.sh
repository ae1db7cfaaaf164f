#!/usr/bin/env bash
# A node lost mid-training and back again: syncgrad-train on two "nodes" (network namespaces, one rank each,
# --nnodes 2 --max-restarts 2, one --checkpoint-dir on the shared file system). Once the first checkpoint is
# complete, node 1's launcher is killed -9 (its rank dies with it); node 0's rank fails, node 0's launcher waits
# for node 1 at the next rendezvous, node 1's launcher is started again, and both resume from the newest
# checkpoint (--resume auto). The job ends on both nodes with the weights of an uninterrupted run, bit for bit.
# Elastic (--nnodes 1:2): node 1's launcher killed the same way and not started again, node 0 goes on alone and
# its rank resumes the 2-rank checkpoint at world size 1 (SYNCGRAD_ELASTIC=1 from the launcher) to the end.
# Usage: test_multinode_train.sh path/to/syncgrad-launch path/to/syncgrad-train
set -u
launch=$(realpath "$1")
train=$(realpath "$2")
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/netns.sh"
start_two_node_test 2
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

for i in $(seq 150); do echo "a rolling stone gathers no moss, number $((i % 5))."; done >"$tmp/text"
args=(--model gpt --data-dir "$tmp/text" --model-config "block_size=16,n_layer=1,n_head=2,n_embd=16" --batch-size 4
  --optimizer adamw --lr 0.01 --workers 1 --log-every 4 --epochs 1000 --max-steps 40 --checkpoint-every 4)
dir="$tmp/restarted"
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
# Attempt 0, rank 1 (node 1): kills its own launcher -9 once the first checkpoint is complete.
if [ "\$SYNCGRAD_RESTART_COUNT" = 0 ] && [ "\$RANK" = 1 ]; then
  launcher=\$PPID
  ( until [ -f "$dir/step-000004/manifest.json" ]; do sleep 0.02; done; kill -KILL \$launcher ) &
fi
exec "$train" "\$@"
EOF
chmod +x "$tmp/rank.sh"

node() {  # node RANK OUT: node RANK's launcher in the background, its pid in $launched
  SYNCGRAD_TEST_SAVE_DELAY_MS=200 ip netns exec "sg-mn-$$-$1" "$launch" --nnodes 2 --node-rank "$1" \
    --max-restarts 2 --rendezvous-timeout 30 --master-addr "$addr0" --master-port 29700 --token "$token" \
    "$tmp/rank.sh" "${args[@]}" --resume auto --checkpoint-dir "$dir" >"$2" 2>&1 &
  launched=$!
  pids+=("$launched")
}
ended() {  # ended SECONDS PID: waits at most SECONDS for PID (killed then); its status in $ended_status
  local deadline=$((SECONDS + $1))
  while kill -0 "$2" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  kill -KILL "$2" 2>/dev/null
  wait "$2"; ended_status=$?
}

node 0 "$tmp/node0.log"; n0=$launched
node 1 "$tmp/node1.log"; n1=$launched
ended 90 $n1; s1=$ended_status
check "node 1's launcher was killed after the first checkpoint" test $s1 -eq 137 -a -f "$dir/step-000004/manifest.json"
node 1 "$tmp/node1b.log"; n1=$launched
ended 90 $n0; s0=$ended_status
ended 30 $n1; s1=$ended_status
grep -v "step " "$tmp/node0.log" | tail -8
grep -v "step " "$tmp/node1b.log" | tail -6
check "node 0's launcher succeeds" test $s0 -eq 0
check "node 1's second launcher succeeds" test $s1 -eq 0
check "node 0 restarted after losing node 1's rank" grep -q "restarting all nodes (restart 1 of 2)" "$tmp/node0.log"
check "both nodes ran attempt 1 together" grep -q "^syncgrad-launch: attempt 1: 2 node(s)" "$tmp/node1b.log"
check "the ranks resumed from a checkpoint" grep -q "resumed from $dir/step-" "$tmp/node0.log"
"$launch" --nproc-per-node 2 "$train" "${args[@]}" --checkpoint-dir "$tmp/straight" >"$tmp/straight.log" 2>&1
check "an uninterrupted run succeeds" test $? -eq 0
check "the resumed job's weights equal the uninterrupted run's, bit for bit" \
  cmp -s "$dir/step-000040/model.safetensors" "$tmp/straight/step-000040/model.safetensors"
check "so does the training state" \
  cmp -s "$dir/step-000040/training_state.safetensors" "$tmp/straight/step-000040/training_state.safetensors"

dir="$tmp/elastic"
sed "s|$tmp/restarted/|$dir/|" "$tmp/rank.sh" >"$tmp/rank_elastic.sh"
chmod +x "$tmp/rank_elastic.sh"
elastic_node() {  # elastic_node RANK OUT
  SYNCGRAD_TEST_SAVE_DELAY_MS=200 ip netns exec "sg-mn-$$-$1" "$launch" --nnodes 1:2 --node-rank "$1" \
    --max-restarts 2 --rendezvous-timeout 30 --master-addr "$addr0" --master-port 29701 --token "$token" \
    "$tmp/rank_elastic.sh" "${args[@]}" --resume auto --checkpoint-dir "$dir" >"$2" 2>&1 &
  launched=$!
  pids+=("$launched")
}
elastic_node 0 "$tmp/elastic0.log"; n0=$launched
elastic_node 1 "$tmp/elastic1.log"; n1=$launched
ended 90 $n1; s1=$ended_status
check "elastic: node 1's launcher was killed after the first checkpoint" \
  test $s1 -eq 137 -a -f "$dir/step-000004/manifest.json"
ended 120 $n0; s0=$ended_status
grep -v "step " "$tmp/elastic0.log" | tail -8
check "elastic: node 0 finishes the job alone" test $s0 -eq 0 -a -f "$dir/step-000040/manifest.json"
check "elastic: its rank resumed the 2-rank checkpoint as 1 process" \
  grep -q "resumed from $dir/step-.* at epoch .*, step " "$tmp/elastic0.log"
check "elastic: and trained on as a single process (no DDP)" \
  bash -c 'grep "\]: training gpt on" "$1" | tail -n 1 | grep -qv "processes (DDP"' _ "$tmp/elastic0.log"
finish
