#!/usr/bin/env bash
# The environment each rank sees: torchrun's variables, the store's address and token, and one compute
# thread per rank unless the user chose a count, the job's id (SYNCGRAD_JOB_ID: fresh per launch, derived from the
# token so that every node's launcher agrees, a user's own kept) and the timeouts the flags set.
# Usage: test_env.sh path/to/syncgrad-launch
set -u
launch=$(realpath "$1")
. "$(dirname "$0")/common.sh"
show='echo "RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE GROUP_RANK=$GROUP_RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT SERVED=$SYNCGRAD_STORE_SERVED TOKEN=$SYNCGRAD_STORE_TOKEN OMP=${OMP_NUM_THREADS:-unset}"'

out=$(env -u OMP_NUM_THREADS "$launch" --nproc-per-node 3 sh -c "$show"); status=$?
check "3 ranks succeed" test $status -eq 0
check "3 lines" test "$(wc -l <<<"$out")" -eq 3
for r in 0 1 2; do
  check "rank $r sees its ranks and sizes" grep -q "^\[rank$r\]: RANK=$r LOCAL_RANK=$r WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 " <<<"$out"
done
check "every rank: MASTER_ADDR 127.0.0.1, served store, OMP_NUM_THREADS=1" \
  test "$(grep -c 'MASTER_ADDR=127.0.0.1 MASTER_PORT=[0-9]* SERVED=1 TOKEN=[0-9a-f]\{32\} OMP=1$' <<<"$out")" -eq 3
check "one port for all ranks" test "$(grep -o 'MASTER_PORT=[0-9]*' <<<"$out" | sort -u | wc -l)" -eq 1
check "the free port is not 0" test -z "$(grep 'MASTER_PORT=0 ' <<<"$out")"
check "one token for all ranks" test "$(grep -o 'TOKEN=[0-9a-f]*' <<<"$out" | sort -u | wc -l)" -eq 1
again=$("$launch" sh -c 'echo $SYNCGRAD_STORE_TOKEN')
check "a fresh token per job" test "$(grep -o 'TOKEN=[0-9a-f]*' <<<"$out" | head -1)" != "TOKEN=${again#*: }"

ids=$(env -u SYNCGRAD_JOB_ID "$launch" --nproc-per-node 2 sh -c 'echo JOB=$SYNCGRAD_JOB_ID')
check "every rank gets the job's id" test "$(grep -c '^\[rank[01]\]: JOB=sg-[0-9a-f]\{12\}$' <<<"$ids")" -eq 2
check "... the same id" test "$(grep -o "JOB=.*" <<<"$ids" | sort -u | wc -l)" -eq 1
again=$(env -u SYNCGRAD_JOB_ID "$launch" sh -c 'echo JOB=$SYNCGRAD_JOB_ID')
check "a fresh job id per launch" test "$(grep -o 'JOB=.*' <<<"$ids" | head -1)" != "${again#*: }"
node() {  # node K: the job id node K's launcher gives its ranks (two nodes, one shared token; node 0 serves a store)
  env -u SYNCGRAD_JOB_ID "$launch" --nnodes 2 --node-rank "$1" --master-addr 127.0.0.1 --master-port $((20000 + $$ % 20000)) --token t0k \
    sh -c 'echo $SYNCGRAD_JOB_ID' | sed 's/^\[rank[0-9]*\]: //'
}
check "every node's launcher derives the same job id from the shared token" test "$(node 0)" = "$(node 1)"
other=$(env -u SYNCGRAD_JOB_ID "$launch" --nnodes 2 --node-rank 1 --master-addr 127.0.0.2 --master-port 29999 \
  --token other sh -c 'echo $SYNCGRAD_JOB_ID')
check "another token, another job id" test "${other#*: }" != "$(node 1)"
out=$(SYNCGRAD_JOB_ID=mine "$launch" sh -c 'echo JOB=$SYNCGRAD_JOB_ID')
check "a job id the user exported is kept" test "$out" = "[rank0]: JOB=mine"
out=$(env -u SYNCGRAD_TIMEOUT -u SYNCGRAD_RENDEZVOUS_TIMEOUT "$launch" --timeout 3 --rendezvous-timeout 2.5 \
  sh -c 'echo T=$SYNCGRAD_TIMEOUT R=$SYNCGRAD_RENDEZVOUS_TIMEOUT')
check "--timeout and --rendezvous-timeout are exported in seconds" test "$out" = "[rank0]: T=3 R=2.5"
out=$(env -u SYNCGRAD_TIMEOUT -u SYNCGRAD_RENDEZVOUS_TIMEOUT "$launch" sh -c 'echo T=${SYNCGRAD_TIMEOUT-unset}')
check "without --timeout nothing is exported (the program's default applies)" test "$out" = "[rank0]: T=unset"

out=$(OMP_NUM_THREADS=3 "$launch" --nproc-per-node 2 sh -c 'echo OMP=$OMP_NUM_THREADS')
check "a user's OMP_NUM_THREADS is kept" test "$(grep -c 'OMP=3$' <<<"$out")" -eq 2

out=$(env -u SYNCGRAD_LAUNCHER "$launch" sh -c 'echo L=$SYNCGRAD_LAUNCHER')
check "the ranks are marked as syncgrad-launch's (their inherited SLURM_* are then not read)" \
  test "$out" = "[rank0]: L=syncgrad-launch"

out=$("$launch" --token s3cret sh -c 'echo TOKEN=$SYNCGRAD_STORE_TOKEN')
check "--token is passed on" test "$out" = "[rank0]: TOKEN=s3cret"

# Node 1 of 2 serves nothing: its ranks are 2 and 3 and they get node 0's address and the shared token.
out=$("$launch" --nnodes 2 --node-rank 1 --nproc-per-node 2 --master-addr 127.0.0.2 --master-port 29999 \
      --token abc sh -c "$show"); status=$?
check "node 1 starts its ranks" test $status -eq 0
for l in 0 1; do
  r=$((2 + l))
  check "node 1 rank $r" grep -q "^\[rank$r\]: RANK=$r LOCAL_RANK=$l WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 MASTER_ADDR=127.0.0.2 MASTER_PORT=29999 SERVED=1 TOKEN=abc " <<<"$out"
done
out=$(SYNCGRAD_STORE_TOKEN=fromenv "$launch" --nnodes 2 --node-rank 1 --master-addr 127.0.0.2 --master-port 29999 \
      sh -c 'echo TOKEN=$SYNCGRAD_STORE_TOKEN')
check "with --nnodes 2 the token comes from SYNCGRAD_STORE_TOKEN" test "$out" = "[rank1]: TOKEN=fromenv"

out=$(RANK=7 FOO=bar "$launch" sh -c 'echo RANK=$RANK FOO=$FOO; read line; echo stdin=$?')
check "the launcher's environment is passed on, its RANK replaced; stdin is empty" \
  test "$out" = "$(printf '[rank0]: RANK=0 FOO=bar\n[rank0]: stdin=1')"
out=$(cd /tmp && PATH="$(dirname "$(command -v sh)"):$PATH" "$launch" env | grep -c '^\[rank0\]: PATH=')
check "PROGRAM is found via PATH" test "$out" -eq 1
finish
