#!/bin/bash
# Session 19, run 2: MXFP4's hand-over from the streaming kernels to the int8 kernels,
# this tree (bench_decode) against the session's start (bench_decode_base), same call.
#   OUT=out CARRY=dir bash bench/decode/s19/handover.sh
# then: python3 bench/decode/s17/ab.py OUT/ho_new.jsonl OUT/ho_base.jsonl --variant default
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=${CARRY:-build-devbin/carry}; mkdir -p /tmp/b
for f in $C/*.tar.xz; do [ -e "$f" ] && xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=12345
[ -n "$TESTS" ] && for t in $TESTS; do timeout 300 /tmp/b/moe-tests $t 2>&1 | grep -E "^FAIL|passed, " | sed "s/^/$t: /"; done
Q="--qtypes mxfp4 --default --no-kdec --routings 1 --reps 3"
for v in new base; do
  b=/tmp/b/bench_decode; [ $v = new ] || b=/tmp/b/bench_decode_base
  timeout 250 $b --quant --only mixtral-8x7b,gpt-oss-20b,gpt-oss-120b,qwen3-30b-a3b $Q \
    --qtokens ${TOKENS:-8,12,16,24,32,48,64,96,128,256} --json "$OUT/ho_$v.jsonl" > "$OUT/ho_$v.log" 2>&1
  timeout 150 $b --quant --only deepseek-v3 $Q --qtokens ${DS_TOKENS:-32,64,96,128} --json "$OUT/ho_${v}_ds.jsonl" >> "$OUT/ho_$v.log" 2>&1
  echo "== $v rc $?"
done
# the int8 kernels of Q4_K and MXFP4 side by side (bytes a stage alike: which is faster per byte)
timeout 100 /tmp/b/bench_decode --quant --only mixtral-8x7b,gpt-oss-20b --qtypes q4_K,mxfp4 --qtokens 16,32 --no-kdec \
  --routings 1 --reps 3 --json "$OUT/q4k_mx.jsonl" > "$OUT/q4k_mx.log" 2>&1
grep -E "^[a-z0-9-]+ +(q4_K|mxfp4) +i8 " "$OUT/q4k_mx.log" | sed -E 's/ +\(.*//'
