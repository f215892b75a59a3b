#!/bin/bash
# Session 27, device call 16: the formats without int8 kernels (Q2_K, Q3_K) between the streaming
# kernels and the mma kernels (k_dec): stream, kdec and the default on the
# same routings, qwen3 T = 8-64 and mixtral T = 4-32, two rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call16.sh
W=/tmp/w16; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --default --no-i8 --reps 10 --routings 2"
for r in 1 2; do
  timeout 150 $B $A --only qwen3-30b-a3b --qtypes q2_K,q3_K --qtokens 8,16,32,48,64 --json $W/r${r}_a.jsonl > $W/out_r${r}_a.log 2>>$W/err.log
  timeout 150 $B $A --only mixtral-8x7b --qtypes q2_K,q3_K --qtokens 4,8,16,24,32 --json $W/r${r}_b.jsonl > $W/out_r${r}_b.log 2>>$W/err.log
done
python3 - $W/r*.jsonl > $W/paths.txt <<'PY'
import json, sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sys.argv[1:]:
    for l in open(p):
        if l.strip():
            r = json.loads(l)
            t[(r["preset"], r["wtype"], r["T"])][r["variant"]].append(r["median_us"])
vs = ["stream", "kdec", "default"]
print("| preset | type | T | " + " | ".join(vs) + " | kdec/stream | default/best |")
print("|---|---|---|" + "---|" * (len(vs) + 2))
for k in sorted(t):
    m = {v: sum(x) / len(x) for v, x in t[k].items()}
    cand = {v: m[v] for v in vs[:2] if v in m}
    b = min(cand, key=cand.get)
    r = m["default"] / cand[b] if "default" in m else 0
    q = m["kdec"] / m["stream"] if "kdec" in m and "stream" in m else 0
    print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(f"{m[v]:.1f}" if v in m else "-" for v in vs) +
          f" | {q:.3f} | {r:.3f}{' <' if r > 1.03 else ''} |")
PY
tar cJf $OUT/call16.tar.xz -C $W .
cat $W/paths.txt; tail -3 $W/err.log
