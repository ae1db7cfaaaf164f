#!/usr/bin/env bash
# Each output line carries its rank's prefix: stdout lines on stdout, stderr lines on stderr, a last line
# without a newline completed at exit, lines written in pieces never mixed with another rank's, lines far
# longer than a pipe's buffer kept whole. Usage: test_output.sh path/to/syncgrad-launch
set -u
launch=$(realpath "$1")
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$launch" --nproc-per-node 2 sh -c 'echo "out $RANK"; echo "err $RANK" >&2; printf "no newline $RANK"' \
  >"$tmp/out" 2>"$tmp/err"; status=$?
check "two ranks succeed" test $status -eq 0
for r in 0 1; do
  check "rank $r: stdout line on stdout" grep -qx "\[rank$r\]: out $r" "$tmp/out"
  check "rank $r: stderr line on stderr" grep -qx "\[rank$r\]: err $r" "$tmp/err"
  check "rank $r: partial last line completed" grep -qx "\[rank$r\]: no newline $r" "$tmp/out"
done
check "no stderr line on stdout" test "$(grep -c err "$tmp/out")" -eq 0
check "stdout ends with a newline" test "$(tail -c 1 "$tmp/out" | od -An -c | tr -d ' ')" = '\n'

# Four ranks write 200 lines each in three pieces with pauses between them: every line must come out whole.
"$launch" --nproc-per-node 4 sh -c 'i=0; while [ $i -lt 200 ]; do printf "r$RANK-a:"; printf "r$RANK-b:"; \
  [ $((i % 50)) -eq 0 ] && sleep 0.01; printf "r$RANK-c.$i\n"; i=$((i + 1)); done' >"$tmp/pieces"; status=$?
check "pieces: status 0" test $status -eq 0
check "pieces: 800 lines" test "$(wc -l <"$tmp/pieces")" -eq 800
bad=$(grep -cvE '^\[rank([0-3])\]: r\1-a:r\1-b:r\1-c\.[0-9]+$' "$tmp/pieces")
check "pieces: no line mixes two ranks (bad lines: $bad)" test "$bad" -eq 0

# A 300 kB line written in pieces (more than a pipe's and a read's buffer), then a line without a newline.
"$launch" --nproc-per-node 2 sh -c 'head -c 300000 /dev/zero | tr "\0" x; echo; printf tail' >"$tmp/long"
check "long lines: 4 lines" test "$(wc -l <"$tmp/long")" -eq 4
check "long lines: each long line whole" \
  test "$(grep -E '^\[rank[01]\]: x+$' "$tmp/long" | awk '{ print length($0) }' | sort -u)" = 300009
check "long lines: tails" test "$(grep -cE '^\[rank[01]\]: tail$' "$tmp/long")" -eq 2

# Output written right before a failing exit is not lost, nor that of a rank stopped by SIGTERM.
"$launch" --nproc-per-node 2 sh -c "if [ \$RANK = 1 ]; then until [ -e $tmp/ready ]; do sleep 0.01; done; \
  printf 'last words'; exit 4; fi; trap 'echo terminated; exit 1' TERM; echo ready; touch $tmp/ready; \
  while :; do sleep 0.05; done" >"$tmp/fail" 2>/dev/null; status=$?
check "failing job: status 4" test $status -eq 4
check "failing rank's partial line" grep -qx '\[rank1\]: last words' "$tmp/fail"
check "stopped rank's output before and after SIGTERM" \
  test "$(grep -cx -e '\[rank0\]: ready' -e '\[rank0\]: terminated' "$tmp/fail")" -eq 2
finish
