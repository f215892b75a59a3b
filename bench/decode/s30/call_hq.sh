#!/bin/bash
# Session 30, device calls 2-3 (RUN=2, 3): h quantised by the gate/up launch (decode_stream.cuh sv_hq_quantise);
# run 2: shared blocks through counters; run 3: shared blocks flagged and quantised by the down blocks.
# Tests (the new bitwise check against MOE_SV_HQ=0, the quant and decode GPU tests in both forms),
# memcheck and racecheck on the streaming tests, then the A/B in one binary: the default against
# MOE_SV_HQ=0 (every down block quantising the f32 h rows it stages, as before), the default layer and
# the streaming kernels forced, GGUF Q8_0 / Q4_K / Q6_K / MXFP4 on the five presets, T = 1-16,
# three rounds of 2 routings; the plans (--describe).
#   RUN=2 OUT=out CARRY=build-devbin/carryN bash bench/decode/s30/call_hq.sh   # (run 2 was call2.sh, the same)
RUN=${RUN:-2}
W=/tmp/w$RUN
. $(dirname $0)/lib.sh
s30_unpack
s30_tests
s30_sanitize cuda_quant_stream_${SAN:-odd_units} cuda_quant_stream_${SAN:-odd_units}
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for v in hq0 new; do
    E=; [ $v = hq0 ] && E="MOE_SV_HQ=0"
    env $E timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,3,4,8,16 --json $W/r${r}_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_hq0.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
timeout 60 $B --quant --no-kdec --no-i8 --describe --reps 2 --routings 1 --only $P --qtypes q4_K,mxfp4 \
  --qtokens 1,4,16 > $W/desc.log 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
grep -c "h quantised once" $W/desc.log
