"""Tables of session 6's runs 7 and 8 (bench/decode/run_s6_more.sh, run_s6_r8.sh):
head against new streaming times per preset, and streaming against the mma decode
kernels (kdec). Usage: python3 bench/decode/s6_tables.py OUT_DIR"""
import collections
import json
import os
import sys


def load(f):
    d = collections.OrderedDict()
    if not os.path.exists(f):
        return d
    for line in open(f):
        r = json.loads(line)
        d[(r["preset"], r["wtype"], r["T"], r["variant"])] = (r["median_us"], r["pct_read_bw"])
    return d


o = sys.argv[1]
h, n = load(f"{o}/presets_head.jsonl"), load(f"{o}/presets_new.jsonl")
print("preset wtype T | head stream us (read%) | new stream | new/head")
for k, a in h.items():
    if k[3] != "stream" or k not in n:
        continue
    b = n[k]
    print(f"{k[0]} {k[1]} {k[2]} | {a[0]:.1f} ({a[1]:.0f}%) | {b[0]:.1f} ({b[1]:.0f}%) | {b[0] / a[0]:.3f}")
c = load(f"{o}/cross.jsonl")
print("preset wtype T | stream us | kdec us | stream/kdec")
for k, a in c.items():
    kk = k[:3] + ("kdec",)
    if k[3] == "stream" and kk in c:
        print(f"{k[0]} {k[1]} {k[2]} | {a[0]:.1f} | {c[kk][0]:.1f} | {a[0] / c[kk][0]:.3f}")
