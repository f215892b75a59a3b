"""Top SASS lines of an ncu --page source --csv file by warp-stall samples, with their top stall reasons, and
the samples summed by warp role where the code says (the producer's bulk copies UBLKCP, mbarrier waits SYNCS,
shared loads LDS/LDSM, mma HMMA). Usage: python3 src_top.py ncu_src.csv [N]"""
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h = next(r for r in rows if r and r[0] == "Address")
ix = {n: i for i, n in enumerate(h)}
body = [r for r in rows[rows.index(h) + 1:] if len(r) == len(h)]
num = lambda r, n: float(r[ix[n]] or 0) if r[ix[n]] not in ("-", "") else 0.0
tot = sum(num(r, "Warp Stall Sampling (All Samples)") for r in body)
print(f"{len(body)} SASS lines, {tot:.0f} samples")
st = [n for n in h if n.startswith("stall_") and "Not Issued" not in n]
ops = {}
for r in body:
    op = r[ix["Source"]].split()[0] if r[ix["Source"]].split() else "?"
    if op.startswith("@"): op = r[ix["Source"]].split()[1]
    ops[op.split(".")[0]] = ops.get(op.split(".")[0], 0) + num(r, "Warp Stall Sampling (All Samples)")
print("by opcode:", ", ".join(f"{k} {100 * v / tot:.1f}%" for k, v in sorted(ops.items(), key=lambda x: -x[1])[:14]))
top = sorted(body, key=lambda r: -num(r, "Warp Stall Sampling (All Samples)"))[:int(sys.argv[2]) if len(sys.argv) > 2 else 30]
for r in top:
    s = sorted(((num(r, n), n[6:]) for n in st), reverse=True)[:3]
    print(f"{r[0][-5:]} {100 * num(r, 'Warp Stall Sampling (All Samples)') / tot:5.1f}% exec {num(r, 'Instructions Executed'):9.0f} "
          f"{r[ix['Source']].strip()[:60]:60s} " + " ".join(f"{n} {v:.0f}" for v, n in s))
