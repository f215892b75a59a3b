#!/bin/bash
# Session 27, device call 5: GGUF decode, every path on the same routings (the streaming kernels, the mma
# kernels k_dec, the int8 tensor-core kernels, the default layer), Q4_K / Q6_K / Q8_0 / MXFP4 at
# T = 1..16 on every preset, two rounds of 2 routings: do the hand-overs of sessions 12-19 still pick
# the faster path?
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call5.sh
W=/tmp/w5; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
for r in 1 2; do
  timeout 280 $B --quant --default --only $P --qtypes q4_K,q6_K,q8_0,mxfp4 --qtokens 1,2,3,4,6,8,12,16 --reps 12 \
    --routings 2 --json $W/r$r.jsonl > $W/out_r$r.log 2>>$W/err.log
done
python3 - $W/r*.jsonl > $W/paths.txt <<'PY'
import json, sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sys.argv[1:]:
    for l in open(p):
        if l.strip():
            r = json.loads(l)
            t[(r["preset"], r["wtype"], r["T"])][r["variant"]].append(r["median_us"])
vs = ["stream", "kdec", "i8", "default"]
print("| preset | type | T | " + " | ".join(vs) + " | best | default/best |")
print("|---|---|---|" + "---|" * (len(vs) + 2))
for k in sorted(t):
    m = {v: sum(x) / len(x) for v, x in t[k].items()}
    cand = {v: m[v] for v in vs[:3] if v in m}
    b = min(cand, key=cand.get)
    r = m["default"] / cand[b] if "default" in m else 0
    print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(f"{m[v]:.1f}" if v in m else "-" for v in vs) +
          f" | {b} | {r:.3f}{' <' if r > 1.03 else ''} |")
PY
tar cJf $OUT/call5.tar.xz -C $W .
grep " <" $W/paths.txt; echo; tail -3 $W/err.log
