#!/usr/bin/env bash
# Ranks die with their launcher: after `kill -9` on syncgrad-launch (which cannot stop anything itself) no rank
# keeps running -- neither ranks in a collective loop nor plain programs -- because each rank was started with
# PR_SET_PDEATHSIG. Usage: test_orphans.sh path/to/syncgrad-launch path/to/launch_rank_probe
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
finish
