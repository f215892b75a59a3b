#!/bin/bash
# Session 10: cuda-quant's choices (streaming kernels, mma kernels, the dequantising prefill
# path) against each path forced, per GPU: bench_decode --quant --default, a table of
# default / best per (preset, type, T).
#   OUT=out CARRY=dir ARGS="--only qwen3-30b-a3b,gpt-oss-20b --qtypes q4_K,q8_0 --qtokens 1,2,4,8,16,32,64,128" \
#     bash bench/decode/run_s10_quant.sh      (device; dir/bench_decode.gz)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c ${CARRY:-build-devbin/carry}/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
timeout 500 /tmp/b/bench_decode --quant --default --reps ${REPS:-15} ${ARGS} --json "$OUT/quant.jsonl" > "$OUT/quant.log" 2>&1
grep -E "HBM read|^GPU" "$OUT/quant.log"
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import json, sys, collections
rows = collections.OrderedDict()
for l in open(f"{sys.argv[1]}/quant.jsonl"):
    r = json.loads(l)
    rows.setdefault((r["preset"], r["wtype"], r["T"]), {})[r["variant"]] = (r["median_us"], r["pct_read_bw"])
vs = ["stream", "kdec", "default"]
print("preset type T | " + " | ".join(vs) + " | default / best")
for k, d in rows.items():
    best = min(v[0] for kk, v in d.items() if kk != "default")
    ratio = d["default"][0] / best if "default" in d else float("nan")
    print(f"{k[0]} {k[1]} {k[2]} | " + " | ".join("%.1f (%.0f%%)" % d[v] if v in d else "-" for v in vs) + " | %.3f" % ratio)
PY
