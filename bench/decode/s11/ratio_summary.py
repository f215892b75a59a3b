"""Geometric mean, best and worst of new / base over the points two bench_decode JSONL files share
(bench/decode/README.md, session 11):  python3 ratio_summary.py run12_base.jsonl run12_new.jsonl"""
import json
import math
import sys

t = {}
for v, path in (("base", sys.argv[1]), ("new", sys.argv[2])):
    for line in open(path):
        r = json.loads(line)
        t.setdefault((r["preset"], r["wtype"], r["T"], r["variant"]), {})[v] = r["median_us"]
q = [d["new"] / d["base"] for d in t.values() if len(d) == 2]
print(f"{len(q)} points: geometric mean {math.exp(sum(map(math.log, q)) / len(q)):.3f}, best {min(q):.2f}, worst {max(q):.2f}")
