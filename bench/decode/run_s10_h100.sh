#!/bin/bash
# Session 10: the decode paths and the hand-over to the grouped GEMM on an H100 (the rule,
# decode.cu dec_max_t, was measured on an H200 in session 5), dense bf16: the streaming and
# mma kernels forced at every T, cuda-sm90 and cuda-jit, and the default, same routing per T.
#   OUT=out CARRY=dir bash bench/decode/run_s10_h100.sh     (device kind nvidia-h100-x1; dir/bench_decode.gz)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c ${CARRY:-build-devbin/carry}/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
timeout 500 /tmp/b/bench_decode --dense --default --cross --reps ${REPS:-15} ${ARGS} --json "$OUT/cross.jsonl" > "$OUT/cross.log" 2>&1
grep -E "HBM read|^GPU" "$OUT/cross.log"
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import json, sys, collections
rows = collections.OrderedDict()
for l in open(f"{sys.argv[1]}/cross.jsonl"):
    r = json.loads(l)
    rows.setdefault((r["preset"], r["T"]), {})[r["variant"]] = (r["median_us"], r["pct_read_bw"])
vs = ["stream", "kdec", "decode", "gemm-sm90", "gemm-jit", "default"]
print("preset T | " + " | ".join(vs) + " | default / best")
for k, d in rows.items():
    best = min(v[0] for kk, v in d.items() if kk != "default")
    ratio = d["default"][0] / best if "default" in d else float("nan")
    print(f"{k[0]} {k[1]} | " + " | ".join("%.1f (%.0f%%)" % d[v] if v in d else "-" for v in vs) + " | %.3f" % ratio)
PY
