#!/bin/bash
# Session 32, device call 9 (H100): the one-wave down plan with a 2-stage ring (MOE_SV_D1W_NS default 2, as
# from run 8 on the H200) against 3 stages (ns3) and against the 16 KB cap (cap: MOE_SV_D1W=0, the plan before
# the session), forced streaming and the layer a user gets, three rounds; the dense GPU tests first.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call9.sh
RUN=${RUN:-9}
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
A="--dense --default --no-kdec --reps 10 --only qwen3-30b-a3b,gpt-oss-20b,gpt-oss-120b --dtokens 1,2,3,4,5,6"
for r in 1 2 3; do
  for v in cap ns3 new; do
    e=""; [ $v = cap ] && e="MOE_SV_D1W=0"; [ $v = ns3 ] && e="MOE_SV_D1W_NS=3"
    env $e timeout 200 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_cap.jsonl $W/r*_ns3.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt $W/ab_table.txt; tail -3 $W/err.log
