#!/usr/bin/env bash
# Ranks die with their launcher: after `kill -9` on syncgrad-launch (which cannot stop anything itself) no rank
# keeps running -- neither ranks in a collective loop nor plain programs -- because each rank was started with
# PR_SET_PDEATHSIG. Across two "nodes" (two launchers on 127.0.0.1), `kill -9` on node 0's launcher takes its
# ranks with it, and node 1's ranks, whose peers are gone, fail their collective and end, and so does node 1's
# launcher, with a failure status. Usage: test_orphans.sh path/to/syncgrad-launch path/to/launch_rank_probe
set -u
launch=$(realpath "$1")
probe=$(realpath "$2")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
cleanup() {
  for f in "$tmp"/pid.*; do [ -s "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
both_started() { [ -s "$tmp/pid.0" ] && [ -s "$tmp/pid.1" ]; }
both_gone() { gone "$tmp/pid.0" && gone "$tmp/pid.1"; }

# Two ranks of a long job (allreducing until told otherwise), then SIGKILL to the launcher.
"$launch" --nproc-per-node 2 "$probe" --loop --pid-dir "$tmp" >"$tmp/out" 2>&1 &
launcher=$!
check "collective ranks started" wait_for 60 both_started
kill -KILL $launcher
wait $launcher 2>/dev/null
check "collective ranks: both gone after kill -9 on the launcher" wait_for 30 both_gone

# Ranks that are plain programs (exec'ed by sh so the pid stays theirs), ignoring SIGTERM.
rm -f "$tmp"/pid.*
"$launch" --nproc-per-node 2 sh -c "trap '' TERM; echo \$\$ >$tmp/pid.\$RANK; exec sleep 600" >"$tmp/out" 2>&1 &
launcher=$!
check "plain ranks started" wait_for 60 both_started
kill -KILL $launcher
wait $launcher 2>/dev/null
check "plain ranks: both gone after kill -9 on the launcher" wait_for 30 both_gone

# Two nodes of two ranks each; node 0's launcher serves the store and is killed.
rm -f "$tmp"/pid.*
port=$("$launch" sh -c 'echo $MASTER_PORT'); port=${port#*: }
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
for node in 0 1; do
  "$launch" --nnodes 2 --node-rank $node --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$port" \
    --token "$token" --timeout 60 "$probe" --loop --pid-dir "$tmp" >"$tmp/node$node" 2>&1 &
  eval "node${node}_launcher=$!"
done
all_started() { for r in 0 1 2 3; do [ -s "$tmp/pid.$r" ] || return 1; done; }
all_gone() { for r in 0 1 2 3; do gone "$tmp/pid.$r" || return 1; done; }
check "two nodes: four ranks started" wait_for 60 all_started
kill -KILL "$node0_launcher"
wait "$node0_launcher" 2>/dev/null
check "two nodes: all four ranks gone after kill -9 on node 0's launcher" wait_for 30 all_gone
node1_ended() { ! kill -0 "$node1_launcher" 2>/dev/null; }
check "two nodes: node 1's launcher ended too" wait_for 30 node1_ended
wait "$node1_launcher"; status=$?
check "two nodes: node 1's launcher reports the failure (status $status)" test $status -ne 0
check "two nodes: node 1's ranks name the lost peer" grep -q "lost the connection to rank" "$tmp/node1"
finish
