#!/usr/bin/env python3
"""Median forward times of bench_decode variants side by side: every file is one variant's jsonl
(name = the file's stem after the last '_'), rounds of the same variant averaged; each row a
(preset, type, T, bench_decode's variant: the path), times in us, % of read and the ratio to the first variant.

    python3 bench/decode/s26/ab_table.py r1_base.jsonl r1_s8.jsonl r2_base.jsonl r2_s8.jsonl
"""
import collections
import json
import os
import sys


def main(paths):
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    pct = collections.defaultdict(lambda: collections.defaultdict(list))
    order = []
    for p in paths:
        v = os.path.splitext(os.path.basename(p))[0].split("_")[-1]
        if v not in order:
            order.append(v)
        for line in open(p):
            if not line.strip():
                continue
            r = json.loads(line)
            k = (r["preset"], r["wtype"], r["T"], r.get("variant", ""))
            times[k][v].append(r["median_us"])
            pct[k][v].append(r["pct_read_bw"])
    print("| preset | type | T | path | " + " | ".join(order) + " | " + " | ".join(f"{v}/{order[0]}" for v in order[1:]) + " |")
    print("|---" * (4 + 2 * len(order) - 1) + "|")
    for k in sorted(times):
        t = times[k]
        med = {v: sum(t[v]) / len(t[v]) for v in order if t.get(v)}
        pc = {v: sum(pct[k][v]) / len(pct[k][v]) for v in order if pct[k].get(v)}
        cells = [f"{med[v]:.1f} ({pc[v]:.0f}%)" if v in med else "-" for v in order]
        rat = [f"{med[v] / med[order[0]]:.3f}" if v in med and order[0] in med else "-" for v in order[1:]]
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(cells) + " | " + " | ".join(rat) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
