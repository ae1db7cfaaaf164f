#!/usr/bin/env python3
"""Counts test cases from meson's testlog.json and prints 'N passed, N failed, N skipped'.

A doctest binary reports '[doctest] test cases: N | P passed | F failed | S skipped' (possibly several such
lines); a binary that exits 77 is one skipped entry, and its reason is echoed; any other test counts as one
case by its result. A binary that failed without reporting a failed case (crash, timeout) adds one failure.
"""
import json
import re
import sys

LINE = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")


def main(path):
    passed = failed = skipped = 0
    try:
        entries = [json.loads(line) for line in open(path) if line.strip()]
    except OSError as err:
        print(f"test_summary: cannot read {path}: {err}")
        print("0 passed, 1 failed, 0 skipped")
        return 1
    for entry in entries:
        name, result, out = entry.get("name", "?"), entry.get("result", "?"), entry.get("stdout", "") or ""
        if result == "SKIP":
            reason = out.strip().splitlines()[-1] if out.strip() else "no reason printed"
            print(f"skipped: {name}: {reason}")
            skipped += 1
            continue
        counts = LINE.findall(out)
        if counts:
            p = sum(int(c[1]) for c in counts)
            f = sum(int(c[2]) for c in counts)
            s = sum(int(c[3]) for c in counts)
            if result != "OK" and f == 0:
                print(f"failed: {name}: {result} after its cases passed (crash or timeout)")
                f = 1
            passed, failed, skipped = passed + p, failed + f, skipped + s
        elif result == "OK":
            passed += 1
        else:
            print(f"failed: {name}: {result}")
            failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/meson-logs/testlog.json"))
