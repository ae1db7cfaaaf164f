#!/usr/bin/env bash
# syncgrad-launch's command line: --help lists every flag; bad values, a missing PROGRAM and the multi-node
# flags without their companions are errors naming the value with a hint and exit status 2; a PROGRAM that
# cannot be executed is named (status 1). Usage: test_flags.sh path/to/syncgrad-launch
set -u
launch=$(realpath "$1")
. "$(dirname "$0")/common.sh"

help=$("$launch" --help); status=$?
check "--help succeeds" test $status -eq 0
for flag in --nproc-per-node --nnodes --node-rank --master-addr --master-port --grace-period --max-restarts --token --timeout \
  --rendezvous-timeout SYNCGRAD_JOB_ID PROGRAM; do
  check "--help mentions $flag" grep -q -- "$flag" <<<"$help"
done

fails_with() {  # fails_with status "fragment" args...: the launcher exits with status and says fragment
  local want="$1" fragment="$2"; shift 2
  local out status
  out=$("$launch" "$@" 2>&1); status=$?
  if [ $status -ne "$want" ]; then echo "  status $status, wanted $want: $out"; return 1; fi
  if ! grep -qF -- "$fragment" <<<"$out"; then echo "  '$fragment' not in: $out"; return 1; fi
}
check "--nproc-per-node 0" fails_with 2 "--nproc-per-node 0: expected an integer >= 1; start at least one process" \
  --nproc-per-node 0 true
check "--nproc-per-node two" fails_with 2 "--nproc-per-node two" --nproc-per-node two true
check "--nnodes 0" fails_with 2 "--nnodes 0: expected an integer >= 1" --nnodes 0 true
check "--node-rank 2 of 2" fails_with 2 "--node-rank 2 is not below --nnodes 2: nodes are numbered 0 .. 1" \
  --nnodes 2 --node-rank 2 true
check "--node-rank -1" fails_with 2 "--node-rank -1" --node-rank -1 true
check "--master-port 0" fails_with 2 "--master-port 0: expected an integer 1..65535; pick a free port" \
  --master-port 0 true
check "--master-port 65536" fails_with 2 "--master-port 65536: expected an integer 1..65535" --master-port 65536 true
check "--grace-period -1" fails_with 2 "--grace-period -1: expected seconds" --grace-period -1 true
check "--token ''" fails_with 2 "--token is empty" --token '' true
check "missing PROGRAM" fails_with 2 "missing PROGRAM" --nproc-per-node 2
check "only --" fails_with 2 "missing PROGRAM" --
check "unknown flag" fails_with 2 "unknown option --bogus" --bogus true
check "flag without value" fails_with 2 "--nnodes" --nnodes
check "--nnodes 2 without --master-addr" fails_with 2 "--nnodes 2 needs --master-addr" \
  --nnodes 2 --master-port 29500 --token t true
check "--nnodes 2 without --master-port" fails_with 2 "--nnodes 2 needs --master-port" \
  --nnodes 2 --master-addr 127.0.0.1 --token t true
check "--nnodes 2 without a token" env -u SYNCGRAD_STORE_TOKEN bash -c "$(declare -f fails_with); launch='$launch'; \
  fails_with 2 'pass the same --token to every node' --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 \
  --master-port 29500 true"
check "a program not in PATH" fails_with 1 "cannot execute PROGRAM 'no-such-program-xyz': not found in PATH" \
  no-such-program-xyz
plain=$(mktemp)
chmod 644 "$plain"
check "a file that is not executable" fails_with 1 "cannot execute PROGRAM '$plain': permission denied" "$plain"
chmod 755 "$plain"
check "an executable without #!" fails_with 1 "cannot execute PROGRAM '$plain': not an executable format" "$plain"
rm -f "$plain"
check "a missing path" fails_with 1 "cannot execute PROGRAM './nope/prog': no such file" ./nope/prog
check "ARGS after PROGRAM are PROGRAM's, even launcher flags" \
  test "$("$launch" echo --nproc-per-node 3 -x)" = "[rank0]: --nproc-per-node 3 -x"
check "-- before PROGRAM" test "$("$launch" --nproc-per-node 1 -- echo hi)" = "[rank0]: hi"
finish
