"""Table of bench_decode's "stream", "kdec" and "default" rows for the variants of run_s7.sh, side by
side, with each variant's time over the first's:  s7_table.py OUT "name:bin[:env] ..." """
import collections
import json
import sys

o = sys.argv[1]
vs = [s.split(":")[0] for s in sys.argv[2].split()]
rows = collections.OrderedDict()
for v in vs:
    try:
        lines = open(f"{o}/decode_{v}.jsonl").readlines()
    except OSError:
        continue
    for l in lines:
        r = json.loads(l)
        if r["variant"] not in ("stream", "kdec", "default"):
            continue
        key = (r["preset"], r["wtype"], r["T"], r["variant"])
        rows.setdefault(key, {})[v] = (r["median_us"], r["pct_read_bw"])
b = vs[0]
print("preset wtype T kind | " + " | ".join(f"{v} us (read%)" for v in vs) + " | " + " | ".join(f"{v}/{b}" for v in vs[1:]))
for (p, w, t, k), d in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][3], kv[0][2])):
    g = lambda x: "%.1f (%.0f%%)" % d[x] if x in d else "-"
    h = d.get(b, (0, 0))[0]
    print(f"{p} {w} {t} {k} | " + " | ".join(g(x) for x in vs) + " | " +
          " | ".join("%.3f" % (d[x][0] / h) if x in d and h else "-" for x in vs[1:]))
