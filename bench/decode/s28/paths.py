#!/usr/bin/env python3
"""bench_decode jsonl rows (any number of files, rounds averaged) as one row a
(preset, type, T): the median time of each path (bench_decode's variant) in us
and the default's ratio to the fastest path.
    python3 bench/decode/s28/paths.py r1_*.jsonl r2_*.jsonl"""
import collections, json, statistics, sys
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sys.argv[1:]:
    for line in open(p):
        if line.strip():
            r = json.loads(line)
            t[(r["preset"], r["wtype"], r["T"])][r["variant"]].append(r["median_us"])
vs = sorted({v for k in t for v in t[k]})
print("| preset | type | T | " + " | ".join(vs) + " | default / best | i8 / stream |")
print("|---" * (3 + len(vs) + 2) + "|")
for k in sorted(t):
    m = {v: statistics.mean(t[k][v]) for v in t[k]}
    best = min(x for v, x in m.items() if v != "default")
    ratio = m["default"] / best if "default" in m else float("nan")
    i8s = m["i8"] / m["stream"] if "i8" in m and "stream" in m else float("nan")
    print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(f"{m[v]:.1f}" if v in m else "-" for v in vs) + f" | {ratio:.3f} | {i8s:.3f} |")
