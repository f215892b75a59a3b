#!/bin/bash
# Session 32, device call 3: the dense expert-major down launch planned as one wave of blocks of whole row
# tiles (decode.cu sv_down_one_wave, partial sums up to 64 KB where the ring keeps 3 stages) against the
# 16 KB cap (MOE_SV_D1W=0). Tests (the new cuda_decode_stream_down_one_wave, the dense case tables on the
# streaming kernels), memcheck on the new test; then the five dense presets, forced streaming (stream
# column) and the layer a user gets (default column), two rounds; plans.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call3.sh
RUN=${RUN:-3}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_decode_stream_down_one_wave cuda_decode_cases_stream cuda_decode_sweep_T_stream_and_mma cuda_decode_stream_chunks; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
timeout 240 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_decode_stream_down_one_wave > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
A="--dense --default --no-kdec --reps 10 --dtokens 1,2,3,4,6,8,12,16"
for r in 1 2; do
  for v in cap 1w; do
    e=""; [ $v = cap ] && e="MOE_SV_D1W=0"
    env $e timeout 250 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
timeout 100 $B --dense --no-kdec --describe --reps 2 --only qwen3-30b-a3b,gpt-oss-20b,gpt-oss-120b --dtokens 3,4,6,8,12,16 \
  > $W/desc.log 2>&1
python3 $(dirname $0)/../s26/ab_table.py $W/r*_cap.jsonl $W/r*_1w.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep -oE "^[a-z0-9-]+ +bf16|T = [0-9]+|down plan: [^;]*" $W/desc.log | paste - - - | cut -c1-150
cat $W/ab_table.txt; tail -3 $W/err.log
