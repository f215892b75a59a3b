#!/usr/bin/env python3
"""Instructions a unit in the streaming kernels' GGUF unit loops, two builds
side by side: for each format, the gate/up instance of capacity 4 (k_sv<F, 0,
4>) and of 1 (k_sv<F, 0, 1>: two units an iteration), the smallest loop of
each dp4a count (one token pass: 16 IDP a unit for Q6_K's zero-point form and
MXFP4's split codes, 8 for the others; the smallest is the path the layer
takes where a lane's units are whole blocks apart).
    unit_loops.py base.sass new.sass   (cuobjdump -sass of decode_stream.cu.o)"""
import subprocess, sys, re, os
here = os.path.dirname(os.path.abspath(__file__))
fmts = {2: "Q4_0", 3: "Q8_0", 4: "MXFP4", 5: "Q2_K", 6: "Q3_K", 7: "Q4_K", 8: "Q5_K", 9: "Q6_K"}
def loops(path, fn):
    out = subprocess.run([sys.executable, os.path.join(here, "sass_loops.py"), path, fn], capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.search(r"(\d+) insts, (\d+) IDP", line)
        if m:
            n, k = int(m.group(1)), int(m.group(2))
            res[k] = min(res.get(k, 10**9), n)
    return res
print("| format | instance | IDP a loop | " + " | ".join(os.path.basename(p) for p in sys.argv[1:]) + " |")
print("|---|---|---|" + "---|" * len(sys.argv[1:]))
for f, name in fmts.items():
    for nt in (4, 1):
        fn = f"_Z4k_svILi{f}ELi0ELi{nt}ELb0E"
        rs = [loops(p, fn) for p in sys.argv[1:]]
        k = min(rs[0]) if rs[0] else None
        if k is None: continue
        print(f"| {name} | k_sv<{f},0,{nt}> | {k} | " + " | ".join(str(r.get(k, '-')) for r in rs) + " |")
