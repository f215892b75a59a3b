#!/usr/bin/env python3
"""The default layer's share of the read bandwidth by (preset, type) and T, one table per jsonl
(bench_decode --default; the "default" lines only).

    python3 bench/decode/s27/state_table.py dense.jsonl quant.jsonl
"""
import collections
import json
import sys


def main(paths):
    for p in paths:
        t = collections.defaultdict(dict)
        ts = set()
        for line in open(p):
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("variant") != "default":
                continue
            t[(r["preset"], r["wtype"])][r["T"]] = r["pct_read_bw"]
            ts.add(r["T"])
        ts = sorted(ts)
        print("| preset | type | " + " | ".join(f"T={x}" for x in ts) + " |")
        print("|---|---|" + "---|" * len(ts))
        for k in sorted(t):
            print(f"| {k[0]} | {k[1]} | " + " | ".join(f"{t[k][x]:.0f}%" if x in t[k] else "-" for x in ts) + " |")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
