"""Table of knobs_t1.sh's JSONL files (OUT/knob_ROUND_KNOB.jsonl): us per (preset, type, T) and knob,
the mean over rounds, and each knob's ratio to the default ('-'); rows of bench_decode's variant argv[2]
(default stream)."""
import collections, glob, json, os, sys
d = collections.defaultdict(list)
knobs = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "knob_*.jsonl"))):
    k = os.path.basename(f)[:-6].split("_", 2)[2]
    if k not in knobs: knobs.append(k)
    for line in open(f):
        r = json.loads(line)
        if r["variant"] != (sys.argv[2] if len(sys.argv) > 2 else "stream"): continue
        d[(r["preset"], r["wtype"], r["T"], k)].append(r["median_us"])
knobs.sort(key=lambda k: (k != "-", k))
keys = sorted({k[:3] for k in d})
print("| preset | type | T | " + " | ".join(knobs) + " |")
print("|---" * (3 + len(knobs)) + "|")
for p, t, T in keys:
    base = sum(d[(p, t, T, "-")]) / len(d[(p, t, T, "-")])
    cells = []
    for k in knobs:
        v = d.get((p, t, T, k))
        if not v: cells.append(""); continue
        m = sum(v) / len(v)
        cells.append("%.1f" % m if k == "-" else "%.1f (%.3f)" % (m, m / base))
    print(f"| {p} | {t} | {T} | " + " | ".join(cells) + " |")
