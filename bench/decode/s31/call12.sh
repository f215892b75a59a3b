#!/bin/bash
# Session 31, device call 12: the int8 kernels' workspace without the f32 h rows where their gate/up epilogue
# quantises h (decode.cu dws_plan). The int8 and quant tests in both MOE_QG_HQ forms (guard bytes around the
# workspace; a stray write into the region that is gone would land in y), memcheck on cuda_quant_i8_hq.
#   RUN=12 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call12.sh
RUN=${RUN:-12}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=310$RUN
for t in cuda_quant_i8_ cuda_quant_sweep_T_i8 cuda_quant_cases_i8 cuda_quant_graph_capture; do
  ( timeout 200 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
  ( MOE_QG_HQ=0 timeout 200 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_qghq0_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
timeout 150 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_i8_hq > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
tar cJf $OUT/call$RUN.tar.xz -C $W .
