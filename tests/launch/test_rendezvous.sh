#!/usr/bin/env bash
# Rendezvous mistakes fail within --rendezvous-timeout (SYNCGRAD_RENDEZVOUS_TIMEOUT) and say what happened:
# a rank that never arrives is named; a wrong MASTER_PORT with nothing behind it, or held by a silent foreign
# service, is named with a hint; a rank of another job (another job id) on the same port is turned away naming
# both ids and the store, and the job's own rank 0 names it when it times out; a second RANK=0 on the port is
# told which process holds rank 0. Jobs started by hand without any job id keep working.
# Usage: test_rendezvous.sh path/to/syncgrad-launch path/to/launch_rank_probe
set -u
launch=$(realpath "$1")
probe=$(realpath "$2")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
clean_env=(env -u SYNCGRAD_JOB_ID -u SLURM_JOB_ID -u SLURM_STEP_ID -u SLURM_PROCID -u SYNCGRAD_STORE_TOKEN
  -u SYNCGRAD_STORE_SERVED -u SYNCGRAD_TIMEOUT -u SYNCGRAD_RENDEZVOUS_TIMEOUT -u LOCAL_RANK -u LOCAL_WORLD_SIZE)
rank() {  # rank R WORLD PORT [NAME=VALUE...]: becomes a rank started by hand on 127.0.0.1:PORT (call it in a subshell)
  local r=$1 world=$2 port=$3; shift 3
  exec "${clean_env[@]}" RANK=$r WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" "$probe"
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A missing rank under the launcher: rank 1 exits without joining.
"$launch" --nproc-per-node 2 --rendezvous-timeout 2 sh -c "[ \$RANK = 1 ] || exec '$probe'" >"$tmp/out" 2>&1
status=$?
cat "$tmp/out"
check "missing rank: rank 0 names rank 1, which never arrived within 2 s" \
  grep -q '^\[rank0\]: RendezvousError: process group rendezvous: rank(s) 1 never arrived within 2000 ms' "$tmp/out"
check "missing rank: the launcher fails with rank 0's status" test $status -eq 3

# The same by hand: SYNCGRAD_RENDEZVOUS_TIMEOUT, the launcher's variable, works without it too.
port=$("$probe" --free-port)
out=$(rank 0 3 "$port" SYNCGRAD_RENDEZVOUS_TIMEOUT=2)
check "by hand: ranks 1 and 2 never arrived within 2 s" grep -q 'rank(s) 1, 2 never arrived within 2000 ms' <<<"$out"

# Nothing listens on MASTER_PORT.
out=$(rank 1 2 "$port" SYNCGRAD_RENDEZVOUS_TIMEOUT=2); echo "$out"
check "nothing on the port: could not connect within 2 s, naming the address" \
  grep -q "RendezvousError: .*could not connect to 127.0.0.1:$port within 2000 ms" <<<"$out"

# A foreign service that accepts connections and says nothing.
"$probe" --silent-listener "$tmp/silent" & pids+=($!)
check "silent listener up" wait_for 20 test -s "$tmp/silent"
silent=$(cat "$tmp/silent")
out=$(rank 1 2 "$silent" SYNCGRAD_RENDEZVOUS_TIMEOUT=2); echo "$out"
check "silent service: no answer to the handshake within 2 s, naming the address and the likely cause" \
  grep -q "connected to 127.0.0.1:$silent but got no answer to the handshake within 2000 ms; the port may belong to another service" <<<"$out"
"$launch" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$silent" --token t \
  --rendezvous-timeout 2 "$probe" >"$tmp/out" 2>&1; status=$?
check "silent service under the launcher (node 1 of 2, --rendezvous-timeout 2)" \
  grep -q "^\[rank1\]: .*no answer to the handshake within 2000 ms" "$tmp/out"
check "... which fails" test $status -ne 0
out=$(rank 0 2 "$silent" SYNCGRAD_RENDEZVOUS_TIMEOUT=2); echo "$out"
check "rank 0 on a port held by something else: the port-in-use message and its hint stand" \
  grep -q "RendezvousError: .*127.0.0.1:$silent: the port is already in use" <<<"$out"

# Two RANK=0 processes on one port: the second is told who holds rank 0.
port=$("$probe" --free-port)
rank 0 2 "$port" SYNCGRAD_RENDEZVOUS_TIMEOUT=60 >"$tmp/first" & first=$!; pids+=($first)
check "first rank 0 serves the store" wait_for 30 listening "$port"
out=$(rank 0 2 "$port" SYNCGRAD_RENDEZVOUS_TIMEOUT=60); echo "$out"
check "second RANK=0: rank 0 is already taken by the first's pid on this host, at the store's address" \
  grep -qF "RendezvousError: rank 0 of this job is already taken by pid $first on host $(hostname) (the store at 127.0.0.1:$port)" <<<"$out"
kill -KILL $first; wait $first 2>/dev/null

# A rank of another job (another SYNCGRAD_JOB_ID) on the same port is turned away; the job's rank 0, still
# waiting for its own rank 1, names it when it times out.
port=$("$probe" --free-port)
rank 0 2 "$port" SYNCGRAD_JOB_ID=jobA SYNCGRAD_RENDEZVOUS_TIMEOUT=5 >"$tmp/a0" & a0=$!; pids+=($a0)
check "job A's rank 0 serves the store" wait_for 30 listening "$port"
out=$(rank 1 2 "$port" SYNCGRAD_JOB_ID=jobB SYNCGRAD_RENDEZVOUS_TIMEOUT=5); echo "$out"
check "job B's rank 1 is turned away naming both jobs and the store" \
  grep -qF "RendezvousError: rank 1: this rank belongs to job jobB, the store at 127.0.0.1:$port serves job jobA (its rank 0 is pid $a0 on host $(hostname)): two jobs share MASTER_PORT?" <<<"$out"
wait $a0; cat "$tmp/a0"
check "job A's rank 0 times out naming the rank of job B it turned away" \
  grep -qE "RendezvousError: .*rank\(s\) 1 never arrived.*turned away ranks of another job: rank 1 of job jobB \(pid [0-9]+ on host" "$tmp/a0"

# Slurm's job ids tell two jobs apart the same way.
port=$("$probe" --free-port)
rank 0 2 "$port" SLURM_JOB_ID=100 SYNCGRAD_RENDEZVOUS_TIMEOUT=5 >"$tmp/a0" & a0=$!; pids+=($a0)
check "Slurm job 100's rank 0 serves the store" wait_for 30 listening "$port"
out=$(rank 1 2 "$port" SLURM_JOB_ID=101 SYNCGRAD_RENDEZVOUS_TIMEOUT=5)
check "Slurm job 101's rank is turned away" grep -q "this rank belongs to job 101, the store at 127.0.0.1:$port serves job 100" <<<"$out"
kill -KILL $a0; wait $a0 2>/dev/null

# Jobs started by hand, without any job id, and with one id on every rank, keep working.
for ids in "" "SYNCGRAD_JOB_ID=same"; do
  port=$("$probe" --free-port)
  rank 0 2 "$port" $ids SYNCGRAD_RENDEZVOUS_TIMEOUT=60 >"$tmp/r0" & r0=$!; pids+=($r0)
  (rank 1 2 "$port" $ids SYNCGRAD_RENDEZVOUS_TIMEOUT=60) >"$tmp/r1"; s1=$?
  wait $r0; s0=$?
  check "by hand (${ids:-no job id}): both ranks join and finish" test $s0 -eq 0 -a $s1 -eq 0
  check "by hand (${ids:-no job id}): rank 1 joined" grep -q "joined: rank 1 of 2" "$tmp/r1"
done
finish
