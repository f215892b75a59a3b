#!/usr/bin/env python3
"""Session 16's table: bench_decode --quant JSON lines (rows stream, i8, default)
as a markdown table per (preset, type): us and % of read of each row by T, and
default / stream. Usage: table.py run8_quant.jsonl [--types q8_0,q4_K,mxfp4]"""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
types = sys.argv[sys.argv.index("--types") + 1].split(",") if "--types" in sys.argv else None
d = {}
for r in rows:
    d[(r["preset"], r["wtype"], r["T"], r["variant"])] = r
keys = sorted({(r["preset"], r["wtype"]) for r in rows}, key=lambda k: (k[0], k[1]))
Ts = sorted({r["T"] for r in rows})
print("| preset | type | T | streaming us (% read) | i8 us (% read) | default us (% read) | default / streaming |")
print("|---|---|---|---|---|---|---|")
for p, t in keys:
    if types and t not in types:
        continue
    for T in Ts:
        s, i, df = (d.get((p, t, T, v)) for v in ("stream", "i8", "default"))
        if not df:
            continue
        f = lambda r: "%.1f (%.0f%%)" % (r["median_us"], r["pct_read_bw"]) if r else "-"
        ratio = "%.2f" % (df["median_us"] / s["median_us"]) if s else "-"
        print("| %s | %s | %d | %s | %s | %s | %s |" % (p, t, T, f(s), f(i), f(df), ratio))
