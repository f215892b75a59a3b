#!/bin/bash
# Session 31, device call 5 (H200), and through call7.sh calls 7 and 10 (H200): the session's
# build. Tests (the quant and decode GPU tests, the new cuda_quant_stream_copies and cuda_quant_stream_split_rule,
# the host split tests), memcheck and racecheck on streaming tests; then the default layer against the session's
# start in one binary (START, default MOE_SV_CST=0 MOE_SV_DYNW=0 MOE_SV_DYN=3: a copy a row, the even split at
# T = 3-8 only), Q8_0 / Q4_K / Q6_K / MXFP4 on the five presets, T = TOKENS (default 1-16), ROUNDS rounds of 2
# routings.
#   RUN=5 ROUNDS=2 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call5.sh
RUN=${RUN:-5}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=310$RUN
( timeout 100 /tmp/b/moe-tests decode_ ) > $W/tests_host_decode_.log 2>&1
for t in cuda_quant_stream_ cuda_quant_cases cuda_quant_sweep_ cuda_quant_graph_capture cuda_quant_i8_ cuda_decode_ cuda_stream_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
s30_sanitize cuda_quant_stream_copies cuda_quant_cases_stream_2launch
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-2}); do
  env ${START:-MOE_SV_CST=0 MOE_SV_DYNW=0 MOE_SV_DYN=3} timeout 250 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 \
    --qtokens ${TOKENS:-1,2,3,4,6,8,12,16} --json $W/r${r}_start.jsonl > /dev/null 2>>$W/err.log
  timeout 250 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens ${TOKENS:-1,2,3,4,6,8,12,16} --json $W/r${r}_new.jsonl \
    > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_start.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$6,$7,$8}'; tail -3 $W/err.log
