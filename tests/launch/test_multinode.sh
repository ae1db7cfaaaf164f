#!/usr/bin/env bash
# Two "nodes" on one machine: network namespaces joined by a veth pair (10.231.0.1 and 10.231.0.2, which
# exist only inside them). Each runs its own syncgrad-launch --nnodes 2 with two ranks; node 0's launcher
# serves the store at its namespace's address and the four ranks allreduce over Gloo across the veth.
# Needs root and `ip netns` (skipped otherwise). The namespaces are removed however the test ends.
# Usage: test_multinode.sh path/to/syncgrad-launch path/to/launch_allreduce_check
set -u
launch=$(realpath "$1")
program=$(realpath "$2")
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/netns.sh"
start_two_node_test 0

token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
node() {  # node RANK: this node's launcher, in its namespace
  ip netns exec "sg-mn-$$-$1" timeout 90 "$launch" --nnodes 2 --node-rank "$1" --nproc-per-node 2 \
    --master-addr "$addr0" --master-port 29500 --token "$token" "$program" >"$tmp/out$1" 2>&1
}
start=$(date +%s%N)
node 0 & pids+=($!)
node 1 & pids+=($!)
wait "${pids[0]}"; status0=$?
wait "${pids[1]}"; status1=$?
echo "two nodes, four ranks: allreduce done after $(elapsed_ms "$start") ms"
cat "$tmp/out0" "$tmp/out1"
check "node 0's launcher succeeds" test $status0 -eq 0
check "node 1's launcher succeeds" test $status1 -eq 0
for r in 0 1; do check "node 0: rank $r summed 1+2+3+4" grep -qx "\[rank$r\]: allreduce ok: rank $r of 4 got 10" "$tmp/out0"; done
for r in 2 3; do check "node 1: rank $r summed 1+2+3+4" grep -qx "\[rank$r\]: allreduce ok: rank $r of 4 got 10" "$tmp/out1"; done

# Node 1 started with a different token is refused by node 0's store and fails; node 0 is stopped with it.
pids=()
ip netns exec "$ns0" timeout 60 "$launch" --nnodes 2 --node-rank 0 --master-addr "$addr0" --master-port 29501 \
  --token "$token" --grace-period 1 "$program" >"$tmp/out0" 2>&1 & pids+=($!)
ip netns exec "$ns1" timeout 60 "$launch" --nnodes 2 --node-rank 1 --master-addr "$addr0" --master-port 29501 \
  --token wrong "$program" >"$tmp/out1" 2>&1 & pids+=($!)
wait "${pids[1]}"; status1=$?
kill -TERM "${pids[0]}" 2>/dev/null
wait "${pids[0]}"
cat "$tmp/out1"
check "a node with the wrong token fails" test $status1 -ne 0 -a $status1 -ne 124
check "... because its token was refused" grep -q "rejected this process's token" "$tmp/out1"
finish
