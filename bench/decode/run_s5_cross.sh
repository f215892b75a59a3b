#!/bin/bash
# Session 5: the hand-over from the decode kernels to the grouped GEMM, dense bf16:
# the streaming and mma kernels forced at every T, cuda-sm90 and cuda-jit (what the
# default hands over to), and the default itself, same routing per T, same call.
#   OUT=out bash bench/decode/run_s5_cross.sh      (device; build-devbin/carry/bench_decode.gz carried)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c build-devbin/carry/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
timeout 400 /tmp/b/bench_decode --dense --default --cross --reps ${REPS:-15} --json "$OUT/cross.jsonl" > "$OUT/cross.log" 2>&1
python3 - "$OUT" <<'PY'
import json, sys, collections
rows = collections.OrderedDict()
for l in open(f"{sys.argv[1]}/cross.jsonl"):
    r = json.loads(l)
    rows.setdefault((r["preset"], r["T"]), {})[r["variant"]] = (r["median_us"], r["pct_read_bw"])
vs = ["stream", "kdec", "decode", "gemm-sm90", "gemm-jit", "default"]
print("preset T | " + " | ".join(vs))
for k, d in sorted(rows.items(), key=lambda kv: (list(rows).index(kv[0]) if False else 0, kv[0][0], kv[0][1])):
    print(f"{k[0]} {k[1]} | " + " | ".join("%.1f (%.0f%%)" % d[v] if v in d else "-" for v in vs))
PY
