#!/usr/bin/env bash
# The launcher serves the job's TCPStore: on a free port by default, or on --master-port; every rank reaches
# it with the environment alone and the job's token, a wrong token is refused at once and named in the
# waiting rank's timeout, and a --master-port already in use is the store's error. Usage: test_store.sh path/to/syncgrad-launch path/to/launch_store_client
set -u
launch=$(realpath "$1")
client=$(realpath "$2")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$launch" --nproc-per-node 3 "$client" 2>&1); status=$?
echo "$out"
check "3 ranks reach the store on the free port" test $status -eq 0
check "3 ranks read every key" test "$(grep -c 'store ok: rank [0-2] of 3 read all 3 keys from 127.0.0.1:' <<<"$out")" -eq 3

out=$("$launch" --nproc-per-node 2 "$client" wrong-token 2>&1); status=$?
echo "$out"
check "a wrong token is refused" test $status -eq 0
check "both ranks were refused" test "$(grep -c '^\[rank[01]\]: rejected: ' <<<"$out")" -eq 2
check "... at once, as a rendezvous mistake naming the token variable" \
  grep -q "refused our token; the job's ranks must share SYNCGRAD_STORE_TOKEN" <<<"$out"

# Rank 1 has a wrong token: it is refused, and rank 0's wait for it times out naming the refused connection.
out=$("$launch" --nproc-per-node 2 "$client" one-wrong-token 2>&1); status=$?
echo "$out"
check "one wrong token: both ranks saw what they expected" test $status -eq 0
check "rank 1 was refused" grep -q '^\[rank1\]: rejected: ' <<<"$out"
check "rank 0's timeout names the refused connection" \
  grep -q '^\[rank0\]: timeout names the refusal: .*has refused 1 connection with a wrong token from 127.0.0.1' <<<"$out"

# A port that was free a moment ago, then the same port while a job holds it.
port=$("$launch" sh -c 'echo $MASTER_PORT'); port=${port#*: }
out=$("$launch" --master-port "$port" --nproc-per-node 2 "$client" 2>&1); status=$?
check "--master-port $port is served" test $status -eq 0
check "--master-port $port is the port the ranks use" test "$(grep -c "from 127.0.0.1:$port\$" <<<"$out")" -eq 2

"$launch" sh -c 'echo $MASTER_PORT; sleep 60' >"$tmp/first" &
first=$!
check "first job started" wait_for 10 grep -q rank0 "$tmp/first"
port=$(sed 's/.*: //' "$tmp/first")
out=$("$launch" --master-port "$port" sh -c 'echo should not run' 2>&1); status=$?
echo "$out"
check "a port in use: non-zero status" test $status -ne 0
check "a port in use: the store's error names the port" grep -q "syncgrad-launch: error: .*$port" <<<"$out"
check "a port in use: no rank started" test -z "$(grep 'should not run' <<<"$out")"
kill -TERM $first
wait $first
finish
