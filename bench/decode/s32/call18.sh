#!/bin/bash
# Session 32, device call 18: sv_produce's copy span in one helper (sv_copy_span, used by the byte count and
# the copies; no change meant). The stream tests (the three copy forms bitwise equal), the quant and dense
# case tables, memcheck; a few timings (the PTX of decode_stream.cu is the same before and after, checked here).
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call18.sh
RUN=${RUN:-18}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_quant_stream_copies cuda_quant_cases cuda_decode_ cuda_stream_ cuda_quant_stream_hq; do
  ( timeout 450 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
timeout 240 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_cases_stream_down_expert > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1)"
timeout 100 $B --quant --default --no-kdec --no-i8 --reps 10 --routings 2 --only qwen3-30b-a3b,mixtral-8x7b \
  --qtypes q4_K,q8_0 --qtokens 1,4,16 --json $W/quant.jsonl > $W/quant.log 2>>$W/err.log
python3 $(dirname $0)/../s26/ab_table.py $W/quant.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt $W/ab_table.txt; tail -3 $W/err.log
