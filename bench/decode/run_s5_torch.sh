#!/bin/bash
# Session 5: dense bf16 decode, libmoe's default path against the PyTorch pipeline
# (bench/decode/torch_moe.py: torchtitan-style, CUDA-graph replay), T = 1..64, same call.
#   OUT=out bash bench/decode/run_s5_torch.sh      (device; build-devbin/carry/bench_decode.gz carried)
# libmoe: bench_decode --dense --default, variant "default" (a layer made without
# variables: streaming kernels at T = 1, mma kernels above, the grouped GEMM from the
# hand-over T = 3 E / K).
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c build-devbin/carry/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
timeout 200 /tmp/b/bench_decode --dense --default --reps ${REPS:-20} --json "$OUT/libmoe.jsonl" > "$OUT/libmoe.log" 2>&1
PYTHONUNBUFFERED=1 timeout 200 python3 bench/decode/torch_moe.py --reps ${REPS:-20} --json "$OUT/torch.jsonl" > "$OUT/torch.log" 2>&1
python3 - "$OUT" <<'PY'
import json, sys
o = sys.argv[1]
lib, tor = {}, {}
for l in open(f"{o}/libmoe.jsonl"):
    r = json.loads(l)
    if r["variant"] == "default": lib[(r["preset"], r["T"])] = (r["median_us"], r["pct_read_bw"])
for l in open(f"{o}/torch.jsonl"):
    r = json.loads(l); tor[(r["preset"], r["T"])] = (r["median_us"], r["mode"])
print("preset T | libmoe default us (% read) | torch us (mode) | torch / libmoe")
for k in lib:
    t = tor.get(k)
    print(f"{k[0]} {k[1]} | {lib[k][0]:.1f} ({lib[k][1]:.0f}%) | " + (f"{t[0]:.1f} ({t[1]}) | {t[0]/lib[k][0]:.2f}x" if t else "- | -"))
PY
