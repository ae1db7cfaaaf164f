#!/usr/bin/env bash
# syncgrad-launch across two "nodes" (network namespaces, tests/launch/netns.sh), each node's launcher with two
# ranks: a rank killed -9 on node 1 restarts both nodes together (--max-restarts); a node whose launcher is
# killed is named when it does not come back (--nnodes 2), while an elastic job (--nnodes 1:2) goes on with
# node 0 alone and takes node 1 back when it returns; a node that never joins is named; a lost node 0 (the
# store's host) ends node 1's launcher with a message instead of a hang; nodes with different settings are
# refused. The ranks are launch_rank_probe (a real rendezvous and allreduce per attempt) behind a small script.
# Usage: test_multinode_restarts.sh path/to/syncgrad-launch path/to/launch_rank_probe
set -u
launch=$(realpath "$1")
probe=$(realpath "$2")
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/netns.sh"
start_two_node_test 1
host=$(hostname)
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# Each rank says where it runs, then acts by $MODE and the attempt: "sleep" writes its pid to $DIR and sleeps,
# "loop" joins and allreduces until a peer is gone, "join" joins and allreduces once; "elastic" loops while
# the job is short of node 1, and joins once when it has all 4 ranks.
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
echo "attempt \$SYNCGRAD_RESTART_COUNT: rank \$RANK of \$WORLD_SIZE, node \$GROUP_RANK of \$GROUP_WORLD_SIZE, elastic \${SYNCGRAD_ELASTIC:-unset}"
mode=\$MODE
if [ "\$SYNCGRAD_RESTART_COUNT" -gt 0 ]; then mode=join; fi
if [ "\$MODE" = elastic ]; then if [ "\$WORLD_SIZE" = 4 ] && [ "\$SYNCGRAD_RESTART_COUNT" -gt 0 ]; then mode=join; else mode=loop; fi; fi
case \$mode in
  sleep) echo \$\$ >"\$DIR/pid.\$RANK.tmp"; mv "\$DIR/pid.\$RANK.tmp" "\$DIR/pid.\$RANK"; exec sleep 60 ;;
  loop) exec "$probe" --pid-dir "\$DIR" --loop ;;
  join) exec "$probe" ;;
esac
EOF
chmod +x "$tmp/rank.sh"

node() {  # node RANK OUT MODE PORT FLAGS...: node RANK's launcher in the background, its pid in $launched
  local r=$1 out=$2 mode=$3 port=$4; shift 4
  MODE=$mode DIR=$tmp/$mode ip netns exec "sg-mn-$$-$r" "$launch" --node-rank "$r" --nproc-per-node 2 \
    --master-addr "$addr0" --master-port "$port" --token "$token" --grace-period 1 "$@" "$tmp/rank.sh" >"$out" 2>&1 &
  launched=$!
  pids+=("$launched")
}
ended() {  # ended SECONDS PID: waits at most SECONDS for PID (killed then); its status in $ended_status
  local deadline=$((SECONDS + $1))
  while kill -0 "$2" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  kill -KILL "$2" 2>/dev/null
  wait "$2"; ended_status=$?
}
all_pids() {  # all_pids DIR N...: the pid files of ranks N... exist in DIR
  local d=$1; shift
  for r in "$@"; do [ -s "$d/pid.$r" ] || return 1; done
}
mkdir "$tmp/sleep" "$tmp/loop" "$tmp/elastic"

# (a) --nnodes 2 --max-restarts 2: rank 3 (node 1) is killed -9; both nodes restart together, all four ranks meet
# again in attempt 1 and the job succeeds on both nodes.
node 0 "$tmp/a0" sleep 29610 --nnodes 2 --max-restarts 2; a0=$launched
node 1 "$tmp/a1" sleep 29610 --nnodes 2 --max-restarts 2; a1=$launched
check "(a) all four ranks up" wait_for 30 all_pids "$tmp/sleep" 0 1 2 3
start=$(date +%s%N)
kill -KILL "$(cat "$tmp/sleep/pid.3")"
ended 40 $a0; s0=$ended_status
ended 40 $a1; s1=$ended_status
echo "(a) from the kill to both nodes done with attempt 1 (stop, rendezvous, 4 ranks joined again): $(elapsed_ms "$start") ms"
cat "$tmp/a0" "$tmp/a1"
restart_line="node 1 (host $host): rank 3 was killed by SIGKILL (signal 9); restarting all nodes (restart 1 of 2)"
check "(a) node 0's launcher succeeds" test $s0 -eq 0
check "(a) node 1's launcher succeeds" test $s1 -eq 0
check "(a) node 1 names the failure and restarts" grep -qF "syncgrad-launch: $restart_line" "$tmp/a1"
check "(a) node 0 restarts for it too" grep -qF "syncgrad-launch: $restart_line; stopping 2 ranks" "$tmp/a0"
for r in 0 1; do check "(a) rank $r joined attempt 1 (world of 4) on node 0" grep -qx "\[rank$r\]: joined: rank $r of 4.*" "$tmp/a0"; done
for r in 2 3; do check "(a) rank $r joined attempt 1 (world of 4) on node 1" grep -qx "\[rank$r\]: joined: rank $r of 4.*" "$tmp/a1"; done
check "(a) rank 3 saw SYNCGRAD_RESTART_COUNT=1" grep -qx "\[rank3\]: attempt 1: rank 3 of 4, node 1 of 2, elastic unset" "$tmp/a1"
check "(a) one restart only" test "$(grep -c 'restarting all nodes' "$tmp/a0")" -eq 1

# (b) --nnodes 2: node 1's launcher is killed -9 (its ranks die with it); node 0's ranks fail, node 0 restarts and
# waits --rendezvous-timeout for node 1, then ends naming it.
node 0 "$tmp/b0" loop 29620 --nnodes 2 --max-restarts 1 --rendezvous-timeout 3 --timeout 5; b0=$launched
node 1 "$tmp/b1" loop 29620 --nnodes 2 --max-restarts 1 --rendezvous-timeout 3 --timeout 5; b1=$launched
check "(b) all four ranks up" wait_for 30 all_pids "$tmp/loop" 0 1 2 3
kill -KILL $b1
ended 40 $b0; s0=$ended_status
cat "$tmp/b0"
check "(b) node 0's launcher fails (status 1)" test $s0 -eq 1
check "(b) node 0 restarted after its ranks lost node 1" grep -q "restarting all nodes (restart 1 of 1)" "$tmp/b0"
check "(b) the lost node is named with its host" grep -qF \
  "syncgrad-launch: error: attempt 1: node 1 (host $host) did not join within --rendezvous-timeout 3 s; 1 of 2 nodes joined and the job needs all 2 nodes (--nnodes 2)" "$tmp/b0"

# (c) --nnodes 1:2: the same loss; node 0 goes on alone (world of 2, SYNCGRAD_ELASTIC=1), then node 1's launcher is
# started again: it is taken in at a restart that does not count, and the job ends on both with four ranks.
rm -f "$tmp/elastic"/pid.*
node 0 "$tmp/c0" elastic 29630 --nnodes 1:2 --max-restarts 1 --rendezvous-timeout 3 --timeout 5; c0=$launched
node 1 "$tmp/c1" elastic 29630 --nnodes 1:2 --max-restarts 1 --rendezvous-timeout 3 --timeout 5; c1=$launched
check "(c) all four ranks up" wait_for 30 all_pids "$tmp/elastic" 0 1 2 3
kill -KILL $c1
rm -f "$tmp/elastic"/pid.*
check "(c) node 0 goes on alone: its two ranks meet again" wait_for 30 all_pids "$tmp/elastic" 0 1
check "(c) ... as attempt 1 with world size 2" grep -qF \
  "syncgrad-launch: attempt 1: 1 node(s): node 0 (host $host); node 0 (host $host) runs ranks 0..1 of 2" "$tmp/c0"
check "(c) ... seeing SYNCGRAD_ELASTIC=1" grep -qx "\[rank1\]: attempt 1: rank 1 of 2, node 0 of 1, elastic 1" "$tmp/c0"
node 1 "$tmp/c1b" elastic 29630 --nnodes 1:2 --max-restarts 1 --rendezvous-timeout 3 --timeout 5; c1=$launched
ended 40 $c0; s0=$ended_status
ended 40 $c1; s1=$ended_status
cat "$tmp/c0" "$tmp/c1b"
check "(c) node 0's launcher succeeds" test $s0 -eq 0
check "(c) the returning node 1's launcher succeeds" test $s1 -eq 0
check "(c) node 1 is taken in without using a restart" grep -qF \
  "node 1 (host $host) joins the job; restarting all nodes to take it in (not counted against --max-restarts)" "$tmp/c0"
check "(c) attempt 2 has both nodes again" grep -qF "syncgrad-launch: attempt 2: 2 node(s)" "$tmp/c1b"
check "(c) rank 3 joined attempt 2 in a world of 4" grep -qx "\[rank3\]: joined: rank 3 of 4.*" "$tmp/c1b"

# (d) A node that never comes is named after --rendezvous-timeout (attempt 0).
node 0 "$tmp/d0" join 29640 --nnodes 2 --max-restarts 1 --rendezvous-timeout 2; d0=$launched
ended 30 $d0; s0=$ended_status
cat "$tmp/d0"
check "(d) node 0 fails (status 1)" test $s0 -eq 1
check "(d) ... naming the node that never joined" grep -qF \
  "error: attempt 0: node 1 (never joined) did not join within --rendezvous-timeout 2 s" "$tmp/d0"

# (e) Node 0 (the store's host) is lost: node 1's launcher stops its ranks and ends, naming node 0.
rm -f "$tmp/sleep"/pid.*
node 0 "$tmp/e0" sleep 29650 --nnodes 2 --max-restarts 3; e0=$launched
node 1 "$tmp/e1" sleep 29650 --nnodes 2 --max-restarts 3; e1=$launched
check "(e) all four ranks up" wait_for 30 all_pids "$tmp/sleep" 0 1 2 3
kill -KILL $e0
ended 30 $e1; s1=$ended_status
cat "$tmp/e1"
check "(e) node 1's launcher fails (status 1), no hang" test $s1 -eq 1
check "(e) ... naming node 0 and the store it served" grep -qF \
  "node 1 (host $host): lost node 0 ($addr0), whose syncgrad-launch serves the job's store at $addr0:29650" "$tmp/e1"
check "(e) ... saying node 0 is a single point of failure" grep -q "single point of failure" "$tmp/e1"
check "(e) node 1's ranks were stopped" wait_for 10 bash -c "! kill -0 $(cat "$tmp/sleep/pid.2") 2>/dev/null"

# (f) Nodes must agree on their settings: node 1 with another --max-restarts is refused, by name.
node 0 "$tmp/f0" join 29660 --nnodes 2 --max-restarts 1 --rendezvous-timeout 10; f0=$launched
node 1 "$tmp/f1" join 29660 --nnodes 2 --max-restarts 2 --rendezvous-timeout 10; f1=$launched
ended 30 $f0; s0=$ended_status
ended 30 $f1; s1=$ended_status
cat "$tmp/f0" "$tmp/f1"
mismatch="node 1 (host $host) runs with --max-restarts 2 but node 0 with 1; every node's syncgrad-launch needs the same --max-restarts"
check "(f) node 0 refuses node 1's settings" grep -qF "$mismatch" "$tmp/f0"
check "(f) node 1 is told the same" grep -qF "$mismatch" "$tmp/f1"
check "(f) both fail" test $s0 -eq 1 -a $s1 -eq 1
finish
