#!/bin/bash
# Session 36, device call 1 (RUN=N for later ones): the GGUF GEMMs (gemm_sm90_q.cu's register-A kernel,
# BM 64 / 256) take their units in dynamic order (the default) against the static order
# (MOE_SM90_SCHED=0, also static for bf16: a control, session 33's change), in one binary.
# Tests (TESTS=1): the new cuda_quant_prefill_gguf_order, the GGUF GEMMs' case runs, the forced prefill
# path and the bf16 dynamic-order tests (one filter a process); SAN=1: memcheck and racecheck on the new
# test's GGUF GEMM kernels (run 1 gave the filter as regex:, which compute-sanitizer refused: no check).
# Then ROUNDS rounds of bench_decode --prefill (GGUF GEMMs forced, no dequantising rows) of PRESETS x
# QTYPES at TOKENS, static then dynamic; the A/B table last (runN/ab_table.txt).
#   RUN=1 ROUNDS=2 OUT=out CARRY=build-gpu/carryN bash bench/decode/s36/call1.sh
RUN=${RUN:-1}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=360$RUN
if [ "${TESTS:-1}" = 1 ]; then
  s30_run_tests "${TESTLIST:-cuda_quant_prefill_gguf_order cuda_quant_prefill_gguf_gemm cuda_quant_prefill_forced cuda_sm90_dynamic_order cuda_jit_dynamic_order}" ${TT:-300}
fi
if [ "${SAN:-1}" = 1 ]; then
  for tool in memcheck racecheck; do
    timeout ${ST:-200} compute-sanitizer --tool $tool --kernel-name regex=gemm_sm90_qs --print-limit 5 \
      /tmp/b/moe-tests cuda_quant_prefill_gguf_order > $W/$tool.log 2>&1
    echo "$tool: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $W/$tool.log | tail -1) $(tail -n1 $W/$tool.log)"
  done
fi
A="--prefill --prefill-nodeq --reps 10"
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in static dyn; do
    e=""; [ $v = static ] && e="MOE_SM90_SCHED=0"
    env $e timeout 280 $B $A --only ${PRESETS:-qwen3-30b-a3b,mixtral-8x7b,gpt-oss-20b,gpt-oss-120b,deepseek-v3} \
      --qtypes ${QTYPES:-q4_K,q8_0,mxfp4} --prefill-tokens ${TOKENS:-512,4096} --json $W/r${r}_$v.jsonl \
      > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/prefill_ab.py $W/r*_static.jsonl $W/r*_dyn.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; cat $W/ab_table.txt; tail -3 $W/err.log
