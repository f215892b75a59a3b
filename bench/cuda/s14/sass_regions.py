"""Warp-stall samples of an ncu source-page export (bench/cuda/run_s14.sh) summed over address
ranges of the kernel's SASS, and the full-barrier retry count:
    python3 sass_regions.py src_NAME.csv.gz name:start:end [name:start:end ...]   (hex offsets)"""
import csv
import gzip
import sys

rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
hdr, data = rows[1], rows[2:]
I = {h: i for i, h in enumerate(hdr)}
samp = I["Warp Stall Sampling (All Samples)"]
ex = I["Instructions Executed"]


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


base = int(data[0][0], 16)
tot = sum(num(r[samp]) for r in data)
print("total samples %d" % tot)
for spec in sys.argv[2:]:
    nm, a, b = spec.split(":")
    a, b = int(a, 16), int(b, 16)
    s = sum(num(r[samp]) for r in data if a <= int(r[0], 16) - base < b)
    print("  %-12s [%5x, %5x) %5.1f%%" % (nm, a, b, 100 * s / tot))
