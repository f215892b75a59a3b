#!/usr/bin/env python3
"""The layer a user gets ("default" rows of a bench_decode jsonl) as a table: a row a preset (and weight type,
where the file has more than one), a column a T, each cell us and % of read.

    python3 bench/decode/s35/state_table.py runN/quant.jsonl
"""
import collections
import json
import sys


def main(path):
    t = collections.defaultdict(dict)
    Ts, types = set(), set()
    for line in open(path):
        r = json.loads(line)
        if r["variant"] != "default":
            continue
        t[(r["preset"], r["wtype"])][r["T"]] = (r["median_us"], r["pct_read_bw"])
        Ts.add(r["T"])
        types.add(r["wtype"])
    Ts = sorted(Ts)
    by_type = len(types) > 1
    print("| preset | " + ("type | " if by_type else "") + " | ".join(f"T = {T}" for T in Ts) + " |")
    print("|---" * (1 + by_type + len(Ts)) + "|")
    for k in sorted(t):
        head = f"| {k[0]} | " + (f"{k[1]} | " if by_type else "")
        print(head + " | ".join(f"{t[k][T][0]:.1f} ({t[k][T][1]:.0f}%)" if T in t[k] else "-" for T in Ts) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
