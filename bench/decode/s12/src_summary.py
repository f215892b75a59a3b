"""Summary of an ncu source-page export (bench/decode/ncu_s12_src.sh): the stall reasons over
the kernel, then the N instructions with the most stall samples (offset, executed count, SASS,
top three stalls):
    python3 src_summary.py run4_src_gptoss_mx_t1.csv.gz [N]"""
import csv
import gzip
import sys

rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
hdr, data = rows[1], rows[2:]
n_top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
I = {h: i for i, h in enumerate(hdr)}


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
samp = I["Warp Stall Sampling (All Samples)"]
tot = sum(num(r[samp]) for r in data)
base = int(data[0][0], 16)
agg = {s: sum(num(r[I[s]]) for r in data) for s in stalls}
print("total samples", tot, " ".join("%s=%.1f%%" % (s[6:], 100 * v / tot) for s, v in sorted(agg.items(), key=lambda kv: -kv[1])[:8]))
for r in sorted(sorted(data, key=lambda r: -num(r[samp]))[:n_top], key=lambda r: int(r[0], 16)):
    st = sorted(((num(r[I[x]]), x[6:]) for x in stalls), reverse=True)[:3]
    print("%6x %5.1f%% ex=%8d  %-50s %s" % (int(r[0], 16) - base, 100 * num(r[samp]) / tot, num(r[I["Instructions Executed"]]),
                                           r[1][:50], " ".join("%s:%d" % (n, v) for v, n in st if v > 0)))
