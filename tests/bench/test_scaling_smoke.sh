#!/usr/bin/env bash
# A short end-to-end run of `syncgrad-bench scaling` (MLP, 1 and 2 workers, 3 steps): the table is printed
# and the CSV, JSON and SVG files are written and well-formed; bad arguments fail with a message naming them.
# Usage: test_scaling_smoke.sh path/to/syncgrad-bench
set -u
bin="$1"
. "$(dirname "$0")/../check.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 (used to parse the JSON and SVG) is missing"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

out=$("$bin" scaling --model mlp --workers 1,2 --steps 3 --warmup 1 --predict --predict-max 16 \
      --csv "$dir/s.csv" --json "$dir/s.json" --plot "$dir/s.svg" 2>&1); status=$?
echo "$out"
check "the run succeeds" test $status -eq 0
check "the table has DP and DDP rows at 2 workers" grep -qE '^dp +2 ' <<<"$out"
check "the table has a DDP row at 2 workers" grep -qE '^ddp +2 ' <<<"$out"
check "the model is compared with the measurement" grep -q "Model against measurement" <<<"$out"
check "the synthetic data is named" grep -q "synthetic" <<<"$out"
check "predictions reach 16 workers on nvlink4" grep -q 'Predicted on link "nvlink4"' <<<"$out"
check "the well-formed check of the files passes" python3 - "$dir" <<'PY'
import csv, json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/s.csv")))
measured = [r for r in rows if r["kind"] == "measured"]
assert {(r["mode"], r["workers"]) for r in measured} == {("single", "1"), ("dp", "1"), ("ddp", "1"), ("dp", "2"), ("ddp", "2")}, measured
assert all(float(r["samples_per_s"]) > 0 for r in measured)
assert any(r["kind"] == "predicted" and r["workers"] == "16" for r in rows)
doc = json.load(open(f"{d}/s.json"))
assert doc["model"] == "mlp" and doc["workers"] == [1, 2]
assert len(doc["runs"]) == 5 and all(len(r["peak_bytes_per_worker"]) == r["workers"] for r in doc["runs"])
assert doc["measured_link"]["beta_bytes_per_second"] > 0
assert len(doc["validation"]) == 4 and all("error" in v for v in doc["validation"])
assert all(v["measured_step"] in ("mean", "median") for v in doc["validation"])
ddp2 = [r for r in doc["runs"] if r["mode"] == "ddp" and r["workers"] == 2][0]
assert any(c["call"] == "launch" and c["replay_seconds"] > 0 for c in ddp2["collectives"]), ddp2["collectives"]
# one per DDP rank; one for the bench's own process (single, dp); none where the kernel does not report it
assert all(len(r["thread_load_per_step"]) in (0, r["workers"] if r["mode"] == "ddp" else 1) for r in doc["runs"])
assert {c["link"]["name"] for c in doc["predictions"]} == {"measured", "pcie4", "nvlink4", "ib-hdr"}
svg = ET.parse(f"{d}/s.svg").getroot()
assert svg.tag.endswith("svg")
assert len(svg.findall("{http://www.w3.org/2000/svg}polyline")) >= 9  # ideal + DP and DDP on 4 links
print("files ok")
PY

out=$("$bin" scaling --model nosuchmodel 2>&1); status=$?
check "an unknown model fails" test $status -ne 0
check "an unknown model is named with the known ones" grep -q 'nosuchmodel.*mlp' <<<"$out"
out=$("$bin" scaling --model mlp --workers 0,2 2>&1); status=$?
check "worker count 0 fails" test $status -ne 0
check "worker count 0 is explained" grep -q "worker count must be >= 1" <<<"$out"
out=$("$bin" scaling --model mlp --workers two 2>&1); status=$?
check "a worker count that is no number fails" test $status -ne 0
check "it is named" grep -q '"two"' <<<"$out"
out=$("$bin" scaling --model mlp --sweep everything 2>&1); status=$?
check "an unknown sweep fails" test $status -ne 0
check "it is named" grep -q 'everything' <<<"$out"
out=$("$bin" scaling --model mlp --plot /nonexistent-dir/s.svg --workers 1 --steps 1 --warmup 0 --no-ddp 2>&1); status=$?
check "an unwritable plot path fails" test $status -ne 0
check "it is named" grep -q '/nonexistent-dir/s.svg' <<<"$out"

[ $failures -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
