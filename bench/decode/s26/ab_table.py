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


def load(paths, fields):
    """The variants in the order first seen, and for each field in fields its values by (preset, type,
    T, path) and variant (a list: one value a round). Also used by ../s36/prefill_ab.py."""
    vals = {f: collections.defaultdict(lambda: collections.defaultdict(list)) for f in fields}
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
            for f in fields:
                vals[f][k][v].append(r[f])
    return order, vals


def main(paths):
    order, vals = load(paths, ("median_us", "pct_read_bw"))
    times, pct = vals["median_us"], vals["pct_read_bw"]
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
