"""Session 39 run 1: ncu --page source --csv, warp-stall samples by the SASS lines' executed counts (rounded to
100): per k-block, per tile and producer code show as separate classes. Usage: python3 cls.py src.csv"""
import csv, sys, collections
rows=list(csv.reader(open(sys.argv[1])))
ks=[i for i,r in enumerate(rows) if r and r[0]=="Kernel Name"]; ks.append(len(rows))
for a,b in zip(ks,ks[1:]):
    h=rows[a+1]; ix={n:i for i,n in enumerate(h)}
    body=[r for r in rows[a+2:b] if len(r)==len(h)]
    f=lambda r,n: float(r[ix[n]]) if r[ix[n]] not in ("","-") else 0.0
    tot=sum(f(r,"Warp Stall Sampling (All Samples)") for r in body)
    # classify: producer = lines whose source has UTMALDG nearby? use exec buckets
    ex=collections.Counter()
    for r in body: ex[round(f(r,"Instructions Executed"),-2)]+=f(r,"Warp Stall Sampling (All Samples)")
    print("==",rows[a][1][:50], tot)
    for k,v in sorted(ex.items(), key=lambda x:-x[1])[:14]: print(f"   exec~{k:9.0f} {100*v/tot:5.1f}%")
