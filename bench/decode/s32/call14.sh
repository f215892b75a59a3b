#!/bin/bash
# Session 32, device call 14 (H200): run 13's pair copies fixed (the consumer placed a copy's second row a
# column chunk's bytes past the first, KCb, where rows shorter than 128 columns' multiple are shorter: the
# case tables caught it). Tests, sanitizers on the pair test and a dense case table on the streaming kernels,
# then the A/B of run 13 again, three rounds, with gpt-oss-20b and mixtral (no pairs there) as controls.
# Needs bench/decode/s32/pair_copies.patch applied to the build (not merged).
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call14.sh
RUN=${RUN:-14}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_decode_stream_pair_copies cuda_decode_ cuda_stream_ cuda_quant_cases cuda_quant_stream_copies; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
s30_sanitize cuda_decode_stream_pair_copies cuda_decode_cases_stream_down_expert
A="--dense --default --no-kdec --reps 10 --only qwen3-30b-a3b,gpt-oss-20b --dtokens 1,2,3,4,6,8"
for r in 1 2 3; do
  for v in row pair; do
    e=""; [ $v = row ] && e="MOE_SV_DCST=0"
    env $e timeout 200 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_row.jsonl $W/r*_pair.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt $W/ab_table.txt; tail -3 $W/err.log
