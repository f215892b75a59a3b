#!/bin/bash
# Session 32, device call 15: the dense token-major down (T = 1 on rows of I <= 1024) with a ring of a
# block's whole stages, up to 8 (qwen3 T = 1: 8 stages against a ring of 6; run 12's MOE_SV_NS=10 gave
# 0.96 there in two rounds). MOE_SV_NS=6 gives the ring before. The dense tests, then five rounds of
# qwen3 T = 1-2 and gpt-oss-20b T = 1 (expert-major down: unchanged, a control).
# Needs bench/decode/s32/ring8.patch applied to the build (not merged).
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call15.sh
RUN=${RUN:-15}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_decode_ cuda_stream_; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
for r in 1 2 3 4 5; do
  for v in ns6 new; do
    e=""; [ $v = ns6 ] && e="MOE_SV_NS=6"
    env $e timeout 100 $B --dense --default --no-kdec --reps 20 --only qwen3-30b-a3b --dtokens 1,2 --json $W/r${r}_$v.jsonl \
      > $W/out_r${r}_$v.log 2>>$W/err.log
    env $e timeout 100 $B --dense --default --no-kdec --reps 20 --only gpt-oss-20b --dtokens 1 --json $W/r${r}b_$v.jsonl \
      > $W/out_r${r}b_$v.log 2>>$W/err.log
  done
done
grep -A1 "stream.*T=   1" $W/out_r1_new.log | grep -oE "down plan: [^;]*" > $W/plan_new.txt
grep -A1 "stream.*T=   1" $W/out_r1_ns6.log | grep -oE "down plan: [^;]*" > $W/plan_ns6.txt
python3 $(dirname $0)/../s26/ab_table.py $W/r*_ns6.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt $W/plan_ns6.txt $W/plan_new.txt $W/ab_table.txt; tail -3 $W/err.log
