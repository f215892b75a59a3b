"""new / base over the points two bench_decode JSONL files share (bench/decode/README.md, session 11):
    python3 ratio_summary.py run12_base.jsonl run12_new.jsonl           geometric mean, best, worst
    python3 ratio_summary.py run12_base.jsonl run12_new.jsonl --table   the README's table (% of read of new, new / base)"""
import json
import math
import sys

t = {}
for v, path in (("base", sys.argv[1]), ("new", sys.argv[2])):
    for line in open(path):
        r = json.loads(line)
        t.setdefault((r["preset"], r["wtype"], r["T"], r["variant"]), {})[v] = (r["median_us"], r["pct_read_bw"])
if "--table" in sys.argv:
    Ts = sorted({k[2] for k in t})
    rows = {}
    for (p, w, T, _), d in t.items():
        if len(d) == 2:
            rows.setdefault((p, w), {})[T] = "%.0f%% (%.2f)" % (d["new"][1], d["new"][0] / d["base"][0])
    print("| preset | type | " + " | ".join(f"T={T}" for T in Ts) + " |")
    print("|---|---|" + "---|" * len(Ts))
    for (p, w), d in rows.items():
        print(f"| {p} | {w} | " + " | ".join(d.get(T, "-") for T in Ts) + " |")
else:
    q = [d["new"][0] / d["base"][0] for d in t.values() if len(d) == 2]
    print(f"{len(q)} points: geometric mean {math.exp(sum(map(math.log, q)) / len(q)):.3f}, "
          f"best {min(q):.2f}, worst {max(q):.2f}")
