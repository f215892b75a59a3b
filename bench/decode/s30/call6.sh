#!/bin/bash
# Session 30, device calls 6 (H200) and 7 (H100): the session's final build. Tests (the quant and decode GPU
# tests, MOE_SV_HQ=0 too), memcheck on cuda_quant_stream_hq and racecheck on the single launch; then
# the default layer against the session's start in one binary (MOE_SV_HQ=0 MOE_DECODE_FUSED=1: every
# down block quantising h, and the single launch at T = 2 as well), GGUF Q8_0 / Q4_K / Q6_K / MXFP4 on
# the five presets, T = 1-16, ROUNDS rounds of 2 routings.
#   RUN=6 ROUNDS=3 OUT=out CARRY=build-devbin/carry6 bash bench/decode/s30/call6.sh
# run 10 (H200, ROUNDS=1): the same after sv_put_q32 / sv_warp_q32 were factored out (no change in time)
RUN=${RUN:-6}
W=/tmp/w$RUN
. $(dirname $0)/lib.sh
s30_unpack
s30_tests
s30_sanitize cuda_quant_stream_hq cuda_quant_stream_odd_units
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-3}); do
  MOE_SV_HQ=0 MOE_DECODE_FUSED=1 timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,3,4,8,16 \
    --json $W/r${r}_start.jsonl > /dev/null 2>>$W/err.log
  timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,3,4,8,16 --json $W/r${r}_new.jsonl \
    > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_start.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
