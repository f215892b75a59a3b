#!/bin/bash
# Session 37, device calls: the GGUF GEMMs' folded tiles (an expert's last 24 or fewer rows beyond a full
# 256-token tile decoded with it; gemm_sm90_q.cu qs_tile FOLD). The tests in TESTLIST (TESTS=1),
# compute-sanitizer memcheck and racecheck on SANTEST (SAN=1), then ROUNDS rounds of bench_decode
# --prefill (PARGS, default the GGUF GEMMs forced) per variant in VARIANTS (name:binary:VAR=V,...; binary
# new = this build, old = the earlier build's bench_decode, carried beside it as bench_decode_old (one xz
# archive: the two share most of their bytes), or in OLD) on SPECS (preset:qtypes:tokens, space-separated); the
# table against the first variant last (runN/ab_table.txt).
#   RUN=1 ROUNDS=1 OUT=out CARRY=build-gpu/carryN bash bench/decode/s37/call1.sh
RUN=${RUN:-1}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
mkdir -p $W /tmp/b /tmp/b0
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
if [ -n "$OLD" ]; then for f in $OLD/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b0; done; fi
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader > $W/gpu.txt
if [ "${TESTS:-1}" = 1 ]; then
  export MOE_TEST_SEED=370$RUN
  s30_run_tests "${TESTLIST:-cuda_quant_prefill_gguf_fold cuda_quant_prefill_gguf_order cuda_quant_prefill_forced cuda_quant_cases}" ${TT:-400}
fi
if [ "${SAN:-0}" = 1 ]; then
  s30_sanitize ${SANTEST:-cuda_quant_prefill_gguf_fold} ${SANTEST:-cuda_quant_prefill_gguf_fold}
fi
VARIANTS=${VARIANTS:-"new:new: nofold:new:MOE_SM90_QS_FOLD=0 old:old:"}
SPECS=${SPECS:-"qwen3-30b-a3b:q4_K,q8_0:2048,4096,8192 gpt-oss-20b:mxfp4,q8_0:4096 mixtral-8x7b:q4_K,q8_0:4096 deepseek-v3:q4_K:4096"}
A="--prefill ${PARGS:---prefill-nodeq} --reps 10"
for r in $(seq 1 ${ROUNDS:-1}); do
  for vv in $VARIANTS; do
    IFS=: read v bin e <<< "$vv"
    bb=$B; [ "$bin" = old ] && bb=/tmp/b/bench_decode_old && [ -n "$OLD" ] && bb=/tmp/b0/bench_decode
    for sp in $SPECS; do
      IFS=: read p q t <<< "$sp"
      env ${e//,/ } timeout 200 $bb $A --only $p --qtypes $q --prefill-tokens $t \
        --json $W/r${r}_$v.jsonl >> $W/out_r${r}_$v.log 2>>$W/err.log
    done
  done
done
first=${VARIANTS%%:*}
python3 $(dirname $0)/../s36/prefill_ab.py $W/r*_$first.jsonl $(for vv in $VARIANTS; do v=${vv%%:*}; [ $v != $first ] && echo $W/r*_$v.jsonl; done) > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; cat $W/ab_table.txt; tail -3 $W/err.log
