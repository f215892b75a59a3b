#!/bin/bash
# Session 30, device calls 11-12 (H200; RUN=11, 12): the int8 kernels' gate/up launch quantising h in its epilogue
# (decode_qmma.cu k_qg; MOE_QG_HQ=0: k_qg_quant, a launch of its own, as before). Tests (the new
# cuda_quant_i8_hq, bitwise against the old form; the int8 and quant GPU tests, MOE_QG_HQ=0 too),
# memcheck on cuda_quant_i8_hq, racecheck on cuda_quant_i8_ragged; then the A/B in one binary at
# T = 16-64 (the int8 kernels forced, and the default layer), two rounds of 2 routings.
#   RUN=11 OUT=out CARRY=build-devbin/carryN bash bench/decode/s30/call11.sh
# run 12: the gate/up launch that quantises h no longer lets the down launch start early (run 11: mixtral
# MXFP4 T = 16 377 -> 425 us, the down blocks holding SMs through the gate/up waves)
RUN=${RUN:-11}
W=/tmp/w$RUN
. $(dirname $0)/lib.sh
s30_unpack
export MOE_TEST_SEED=300$RUN
for t in cuda_quant_i8_ cuda_quant_sweep_T_i8 cuda_quant_cases cuda_quant_stream_hq cuda_decode_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
for t in cuda_quant_i8_ragged cuda_quant_sweep_T_i8; do
  ( MOE_QG_HQ=0 timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_qghq0_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
s30_sanitize cuda_quant_i8_hq cuda_quant_i8_ragged
A="--quant --default --no-kdec --reps 10 --routings 2"
for r in 1 2; do
  for v in qghq0 new; do
    E=; [ $v = qghq0 ] && E="MOE_QG_HQ=0"
    env $E timeout 120 $B $A --only $P --qtypes q8_0,q4_K,mxfp4 --qtokens 16,32,64 --json $W/r${r}_$v.jsonl \
      > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_qghq0.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep -E "\| (i8|default) \|" $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$5,$6,$7,$8}'; tail -3 $W/err.log
