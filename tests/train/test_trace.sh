#!/usr/bin/env bash
# syncgrad-train --trace: a 2-rank DDP run (MLP) writes one trace-event file on rank 0 that trace_check accepts
# (format, pid = rank, nesting, every bucket launch of rank 0 joined to its Gloo reduction, a checkpoint, clocks
# aligned, the --trace-steps window); syncgrad-trace-svg draws it as an SVG with a lane per (rank, thread) and a
# rectangle per span; a single process traces too; bad values are refused naming them.
# Usage: test_trace.sh syncgrad-launch syncgrad-train trace_check syncgrad-trace-svg
set -u
launch="$1"; train="$2"; trace_check="$3"; trace_svg="$4"
. "$(dirname "$0")/../check.sh"
if ! ls /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte* >/dev/null 2>&1 && [ -z "${SYNCGRAD_DATA_DIR:-}" ]; then
  echo "skipped: Fashion-MNIST is not installed"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Steps 3 to 5 of 6, with every autograd node (--trace-min-us 0), one data worker and a checkpoint at step 4.
out=$("$launch" --nproc-per-node 2 "$train" --model mlp --workers 1 --max-steps 6 --log-every 3 \
  --checkpoint-dir "$tmp/ckpt" --checkpoint-every 4 \
  --trace "$tmp/trace.json" --trace-steps 3:5 --trace-min-us 0 2>&1); status=$?
echo "$out" | tail -3
check "2-rank run with --trace succeeds" test $status -eq 0
check "rank 0 says where the trace is, with the clock alignment" grep -q "^\[rank0\]: trace: wrote $tmp/trace.json (.* 2 ranks, clocks aligned to within" <<<"$out"
check "only rank 0 wrote it" test "$(grep -c 'trace: wrote' <<<"$out")" -eq 1
check "the trace passes trace_check" "$trace_check" "$tmp/trace.json" 2 3 5

svg=$("$trace_svg" "$tmp/trace.json" "$tmp/trace.svg" 2>&1); status=$?
echo "$svg"
check "syncgrad-trace-svg draws it" test $status -eq 0
spans=$(python3 -c 'import json,sys; print(sum(e["ph"]=="X" for e in json.load(open(sys.argv[1]))["traceEvents"]))' "$tmp/trace.json")
check "the SVG is well-formed XML with one rectangle per span ($spans)" python3 - "$tmp/trace.svg" "$spans" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
rects = [r for r in root.iter(ns + "rect") if r.get("class") == "span"]
lanes = [g for g in root.iter(ns + "g") if g.get("class") == "lane"]
labels = [g.find(ns + "text").text for g in lanes]
ok = len(rects) == int(sys.argv[2]) and {g.get("data-pid") for g in lanes} == {"0", "1"}
ok = ok and any(l.startswith("rank 0 / gloo worker") for l in labels) and any(l.startswith("rank 1 / main") for l in labels)
ok = ok and all(float(r.get("width")) > 0 for r in rects)
sys.exit(0 if ok else 1)
PY
echo '{"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1}]}' >"$tmp/bad.json"
out=$("$trace_svg" "$tmp/bad.json" "$tmp/bad.svg" 2>&1); status=$?
check "syncgrad-trace-svg refuses a file that breaks the format" test $status -ne 0
check "... naming the file and the event" grep -q 'bad.json: event 0 has no "dur"' <<<"$out"

# One process, every step: the file is written too (pid 0, "rank 0").
out=$("$train" --model mlp --workers 0 --max-steps 2 --trace "$tmp/one.json" 2>&1); status=$?
check "a single process traces too" test $status -eq 0 -a -s "$tmp/one.json"
check "its trace follows the format and has its steps" python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
steps = {e["args"]["step"] for e in events if e["ph"] == "X" and e["name"].startswith("step ")}
sys.exit(0 if steps == {1, 2} and all("dur" in e for e in events if e["ph"] == "X") else 1)' "$tmp/one.json"

# Bad values: refused before any training, naming the value.
out=$("$train" --model mlp --max-steps 1 --trace "$tmp/t.json" --trace-steps 5:2 2>&1); status=$?
check "--trace-steps 5:2 is refused" test $status -ne 0
check "... saying the first step comes after the last" grep -q "trace-steps 5:2: the first step (5) comes after the last (2)" <<<"$out"
out=$("$train" --model mlp --max-steps 1 --trace "$tmp/t.json" --trace-steps 0:3 2>&1); status=$?
check "--trace-steps 0:3 is refused naming it" grep -q "trace-steps 0:3: the steps must be whole numbers of at least 1" <<<"$out"
out=$("$train" --model mlp --max-steps 1 --trace-steps 1:2 2>&1); status=$?
check "--trace-steps without --trace is refused" grep -q "requires --trace" <<<"$out"
out=$("$train" --model mlp --max-steps 1 --trace "$tmp/missing/dir/t.json" 2>&1); status=$?
check "an unwritable --trace path is refused naming it" grep -q "missing/dir/t.json: the directory .* does not exist" <<<"$out"
check "... before training" bash -c "! grep -q 'training mlp' <<<\"\$0\"" "$out"
out=$("$train" --model mlp --max-steps 1 --trace "$tmp" 2>&1); status=$?
check "a directory as --trace is refused" grep -q "is a directory" <<<"$out"
if [ "$(id -u)" != 0 ]; then
  mkdir "$tmp/ro" && chmod 500 "$tmp/ro"
  out=$("$train" --model mlp --max-steps 1 --trace "$tmp/ro/t.json" 2>&1)
  check "a read-only directory is refused" grep -q "cannot write in" <<<"$out"
fi
finish
