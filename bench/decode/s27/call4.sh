#!/bin/bash
# Session 27, device call 4: dense T = 2..8, every path on the same routings (the streaming kernels,
# the mma kernels, the grouped GEMMs cuda-sm90 / cuda-jit, and the default layer), to re-measure the
# hand-overs set in session 10 (decode.cu sv_init's T limit for dense rows, decode.h moe__dec_max_t and
# moe__dec_gemm_min_t). Three rounds, 4 routings a point.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call4.sh
W=/tmp/w4; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
for r in 1 2 3; do
  timeout 190 $B --dense --default --cross --only $P --dtokens 2,3,4,5,6,8 --ctokens 2,3,4,5,6,8 --reps 15 --routings 4 \
    --json $W/r$r.jsonl > $W/out_r$r.log 2>>$W/err.log
done
python3 - $W/r*.jsonl > $W/paths.txt <<'PY'
import json, sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sys.argv[1:]:
    for l in open(p):
        if l.strip():
            r = json.loads(l)
            t[(r["preset"], r["T"])][r.get("variant") or r.get("backend")].append(r["median_us"])
vs = ["stream", "kdec", "gemm-sm90", "gemm-jit", "default"]
print("| preset | T | " + " | ".join(vs) + " | best | default/best |")
print("|---|---|" + "---|" * (len(vs) + 2))
for k in sorted(t):
    m = {v: sum(x) / len(x) for v, x in t[k].items()}
    cand = {v: m[v] for v in vs[:4] if v in m}
    b = min(cand, key=cand.get) if cand else "-"
    print(f"| {k[0]} | {k[1]} | " + " | ".join(f"{m[v]:.1f}" if v in m else "-" for v in vs) +
          f" | {b} | " + (f"{m['default'] / cand[b]:.3f}" if 'default' in m and cand else "-") + " |")
PY
tar cJf $OUT/call4.tar.xz -C $W .
cat $W/paths.txt; tail -3 $W/err.log
