#!/bin/bash
# Session 32, device call 19: the tests that share env_save / env_restore since 843522c (the streaming
# tests that set MOE_SV_HQ, MOE_SV_CST, MOE_SV_D1W), one filter a process.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call19.sh
RUN=${RUN:-19}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_quant_stream_hq cuda_quant_stream_copies cuda_decode_stream_down_one_wave cuda_quant_stream_split_rule; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
tar cJf $OUT/call$RUN.tar.xz -C $W .
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
