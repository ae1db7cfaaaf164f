#!/usr/bin/env bash
# Metrics and plots end to end: a tiny MLP trained for a few steps by one process and by 2 DDP ranks under
# syncgrad-launch, each with --log-file (CSV and JSONL), then syncgrad-plot overlays both: one SVG per metric,
# both runs in the legend, communication from the DDP run only; --ddp-logging-data prints the DDP summary;
# PNG where rsvg-convert exists. Bad inputs: a missing log, a malformed line, --out FILE.svg without --metric,
# a metric no log has, a bad --label.
# Usage: test_plot_cli.sh path/to/syncgrad-launch path/to/syncgrad-train path/to/syncgrad-plot
set -u
launch="$1"; train="$2"; plot="$3"
. "$(dirname "$0")/../check.sh"
if ! ls /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte* >/dev/null 2>&1 && [ -z "${SYNCGRAD_DATA_DIR:-}" ]; then
  echo "skipped: Fashion-MNIST is not installed"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails_with() { [ "$1" -ne 0 ] && grep -q -- "$2" <<<"$3"; }  # status, pattern, output
run=(--model mlp --workers 1 --max-steps 20 --log-every 5 --eval-every 10)

out=$("$train" "${run[@]}" --log-file "$tmp/w1.csv" 2>&1); status=$?
check "the single-process run succeeds" test $status -eq 0
check "its progress line shows the MFU" grep -q "MFU [0-9.]*%" <<<"$out"
check "its log: header, 4 train rows, 2 eval rows" test "$(wc -l <"$tmp/w1.csv")" -eq 7
check "the eval rows carry the accuracy" grep -qE '^20,1,,,,[0-9.e+-]+,,,,eval,.*,0\.[0-9]+$' "$tmp/w1.csv"

out=$("$launch" --nproc-per-node 2 "$train" "${run[@]}" --log-file "$tmp/w2.jsonl" --ddp-logging-data 2>&1)
status=$?
check "the 2-rank run succeeds" test $status -eq 0
check "it prints the DDP logging data" grep -q "DDP logging data (rank 0):" <<<"$out"
check "with the world size and the bucket sizes" grep -q "world_size: 2" <<<"$out"
check "and the overlap ratio" grep -qE "comm_overlap_ratio: [01]\.[0-9]+" <<<"$out"
check "its JSONL rows have the communication" grep -qE '"comm_ms_per_step":[0-9.e+-]+,' "$tmp/w2.jsonl"
check "and nulls for the loss scale (no GradScaler)" grep -q '"loss_scale":null' "$tmp/w2.jsonl"

out=$("$plot" --out "$tmp/plots" --label "world 1=$tmp/w1.csv" --label "world 2 (DDP)=$tmp/w2.jsonl" 2>&1); status=$?
echo "$out"
check "syncgrad-plot succeeds" test $status -eq 0
for metric in loss accuracy throughput communication mfu memory; do
  check "it wrote $metric.svg" test -s "$tmp/plots/$metric.svg"
done
check "the loss picture's legend names the single-process run" grep -q '>world 1</text>' "$tmp/plots/loss.svg"
check "and the DDP run" grep -q '>world 2 (DDP)</text>' "$tmp/plots/loss.svg"
check "the loss picture has one line per run" test "$(grep -c '<polyline' "$tmp/plots/loss.svg")" -eq 2
check "communication: the DDP run only, total and exposed" \
  test "$(grep -c '<polyline' "$tmp/plots/communication.svg")" -eq 2
check "a note says the single process has no communication" grep -q "note: communication: world 1" <<<"$out"
if command -v rsvg-convert >/dev/null; then
  check "PNG beside the SVG (rsvg-convert on PATH)" test -s "$tmp/plots/loss.png"
else
  echo "skipped: PNG (no rsvg-convert)"
fi

out=$("$plot" --metric loss --out "$tmp/one.svg" --no-png "$tmp/w1.csv" 2>&1); status=$?
check "--out FILE.svg with --metric writes that file" test $status -eq 0 -a -s "$tmp/one.svg"
check "its legend names the run by its file name" grep -q '>w1</text>' "$tmp/one.svg"

out=$("$plot" --out "$tmp/p" "$tmp/missing.csv" 2>&1); status=$?
check "a missing log fails naming it" fails_with $status "missing.csv: cannot read" "$out"
cp "$tmp/w1.csv" "$tmp/bad.csv"; echo "25,1,oops" >>"$tmp/bad.csv"
out=$("$plot" --out "$tmp/p" "$tmp/bad.csv" 2>&1); status=$?
check "a malformed line fails naming file:line" fails_with $status "bad.csv:8: 3 cells" "$out"
out=$("$plot" --out "$tmp/x.svg" "$tmp/w1.csv" 2>&1); status=$?
check "--out FILE.svg without --metric is refused" fails_with $status "is one file: choose the one metric" "$out"
out=$("$plot" --metric communication --out "$tmp/p" "$tmp/w1.csv" 2>&1); status=$?
check "a metric no log has fails saying so" fails_with $status "none of the logs" "$out"
out=$("$plot" --label nolabel "$tmp/w1.csv" 2>&1); status=$?
check "a --label without = is refused" fails_with $status "use NAME=PATH" "$out"
finish
