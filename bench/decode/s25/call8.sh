#!/bin/bash
# Session 25, device call 8: the GGUF GEMMs' k-loop four k-blocks an iteration for the K-quants (each decode's
# place in its super-block a constant). The GGUF GEMM test (every type), then an A/B of the GGUF GEMMs against the
# build before (bench_decode_base) on qwen3, T = 512 (64-token kernel) and 4096 (256-token kernel), two rounds.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s25/call8.sh
W=/tmp/w8; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2529
( MOE_TEST_VERBOSE=1 timeout 350 stdbuf -oL -eL /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm ) > $W/tests_gguf.log 2>&1
echo "== tests: $(tail -n1 $W/tests_gguf.log)"; grep -hE "^FAIL|FAILED" $W/tests_gguf.log | head; grep -h "GGUF GEMMs against" $W/tests_gguf.log
tar cJf $OUT/call8_tests.tar.xz -C $W .
A="--prefill --prefill-nodeq --only qwen3-30b-a3b --prefill-tokens 512,4096 --qtypes q4_K,q5_K,q6_K,q2_K,q3_K --reps 8"
for r in 1 2; do
  for v in base new; do
    B=/tmp/b/bench_decode; [ $v = base ] && B=/tmp/b/bench_decode_base
    timeout 30 $B $A --json $W/ab_${v}_$r.jsonl > $W/ab_${v}_$r.log 2>&1
  done
done
python3 - "$W" <<'PY'
import json, sys, glob, collections
W = sys.argv[1]
t = collections.defaultdict(list)
for f in glob.glob(W + '/ab_*.jsonl'):
    v = f.split('/')[-1].split('_')[1]
    for l in open(f):
        j = json.loads(l)
        t[(j['wtype'], j['T'], v)].append(j['median_us'])
for (w, T) in sorted({(k[0], k[1]) for k in t}):
    b, n = t.get((w, T, 'base'), []), t.get((w, T, 'new'), [])
    if b and n:
        print(f"{w:6s} T={T:5d} base {min(b):8.1f} new {min(n):8.1f} us  new/base {min(n)/min(b):.3f}  (all: {b} / {n})")
PY
tar cJf $OUT/call8.tar.xz -C $W .
