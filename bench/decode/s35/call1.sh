#!/bin/bash
# (Its test block became s30_run_tests in ../s30/lib.sh after the session's runs: the same lines.)
# Session 35, device call 1 (and RUN=N for later ones): the int8 kernels' MXFP4 and Q6_K stages copied by
# linear 16-byte chunks (the default) against row by row (MOE_QG_LIN=0, the form before) in one binary.
# Tests: the int8 and quant case tables, the T sweep on the int8 kernels and the new cuda_quant_i8_lin (one
# filter a process); memcheck and racecheck on cuda_quant_i8_lin. Then ROUNDS rounds of 2 routings of the int8
# kernels forced ("i8") and the layer a user gets ("default"), MXFP4 / Q6_K on mixtral, deepseek-v3 and qwen3
# at T = TOKENS; the A/B table last (runN/ab_table.txt).
#   RUN=1 ROUNDS=2 OUT=out CARRY=build-devbin/carryN bash bench/decode/s35/call1.sh
RUN=${RUN:-1}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=350$RUN
if [ "${TESTS:-1}" = 1 ]; then
  s30_run_tests "${TESTLIST:-cuda_quant_i8_ cuda_quant_cases_i8 cuda_quant_sweep_T_i8}" ${TT:-240}
  s30_sanitize cuda_quant_i8_lin cuda_quant_i8_lin
fi
A="--quant --default --no-kdec --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in row lin; do
    e=""; [ $v = row ] && e="MOE_QG_LIN=0"
    env $e timeout 250 $B $A --only ${PRESETS:-mixtral-8x7b,deepseek-v3,qwen3-30b-a3b} --qtypes ${QTYPES:-mxfp4,q6_K} \
      --qtokens ${TOKENS:-8,16,32,128} --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_row.jsonl $W/r*_lin.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; grep -v "| stream |" $W/ab_table.txt; tail -3 $W/err.log
