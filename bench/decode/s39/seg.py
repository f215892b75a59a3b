"""Session 39 run 1: ncu --page source --csv of one or more kernels, warp-stall samples summed over runs of B
consecutive SASS lines, with the most executed count and the commonest opcodes of each run (the k-loop, the
epilogue and the producer show apart by their counts). Usage: python3 seg.py src.csv [B]"""
import csv, sys, collections
rows=list(csv.reader(open(sys.argv[1])))
ks=[i for i,r in enumerate(rows) if r and r[0]=="Kernel Name"]
ks.append(len(rows))
for a,b in zip(ks,ks[1:]):
    name=rows[a][1][:60]; h=rows[a+1]; ix={n:i for i,n in enumerate(h)}
    body=[r for r in rows[a+2:b] if len(r)==len(h)]
    f=lambda r,n: float(r[ix[n]]) if r[ix[n]] not in ("","-") else 0.0
    tot=sum(f(r,"Warp Stall Sampling (All Samples)") for r in body)
    print("==",name,len(body),"lines",tot,"samples")
    B=int(sys.argv[2]) if len(sys.argv)>2 else 48
    for s in range(0,len(body),B):
        ch=body[s:s+B]; sm=sum(f(r,"Warp Stall Sampling (All Samples)") for r in ch)
        if sm/tot<0.004: continue
        ops=collections.Counter()
        for r in ch:
            t=r[ix["Source"]].split(); 
            if not t: continue
            op=t[1] if t[0].startswith("@") else t[0]
            ops[op.split(".")[0]]+=1
        ex=max(f(r,"Instructions Executed") for r in ch)
        print(f"{s:5d} {100*sm/tot:5.1f}% maxexec {ex:9.0f} ", " ".join(f"{k}{v}" for k,v in ops.most_common(7)))
