#!/bin/bash
# Session 32, device call 10 (H200): the one-wave down plan on GGUF layers too (expert-major down at T <= 8,
# one wave planned): the old formula R = N x expected groups / slots rounds each expert's rows up to
# ceil(N / R) tiles, so the jobs can spill past one wave (mixtral T = 8: 19 tiles x 7-9 groups against 132
# blocks). Tests first; then forced streaming and the layer a user gets, new against MOE_SV_D1W=0 (cap),
# two rounds of 2 routings; plans.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call10.sh
RUN=${RUN:-10}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_quant_cases cuda_quant_sweep_T cuda_quant_stream_split_rule cuda_quant_stream_chunks cuda_stream_; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
timeout 240 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_cases_stream_down_expert > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2 --only $P --qtypes q4_K,q8_0,mxfp4 --qtokens 2,3,4,6,8"
for r in 1 2; do
  for v in cap new; do
    e=""; [ $v = cap ] && e="MOE_SV_D1W=0"
    env $e timeout 280 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
for v in cap new; do
  e=""; [ $v = cap ] && e="MOE_SV_D1W=0"
  env $e timeout 100 $B --quant --no-kdec --no-i8 --describe --reps 1 --routings 1 --only mixtral-8x7b,deepseek-v3,gpt-oss-20b \
    --qtypes q4_K,q8_0 --qtokens 3,4,6,8 > $W/desc_$v.log 2>&1
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_cap.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt
for v in cap new; do echo "== $v"; grep -oE "^[a-z0-9-]+ +[a-z0-9_]+|T = [0-9]+|down plan: [^;]*" $W/desc_$v.log | paste - - - | cut -c1-200; done
cat $W/ab_table.txt; tail -3 $W/err.log
