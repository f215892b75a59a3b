#!/bin/bash
# Session 27, device call 15: (a) the small experts' 2-pair rule (moe__dec_stream_pairs_qg): GPU tests, then
# the default layer against the old limit (MOE_DECODE_STREAM_MAX_T=48) on qwen3 at T = 24-48; (b) groups of
# at most 4 pairs (MOE_SV_NT1=4 MOE_SV_NT2=4) where the streaming kernels keep T K > 2E: the formats
# without int8 kernels (Q2_K, Q3_K) on qwen3 T = 40-64 and mixtral T = 10-32, forced streaming.
# Three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call15.sh
W=/tmp/w15; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2715
for t in cuda_quant_cases cuda_quant_sweep_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
B=/tmp/b/bench_decode
for r in 1 2 3; do
  for v in old new; do
    e=""; [ $v = old ] && e="MOE_DECODE_STREAM_MAX_T=48"
    env $e timeout 100 $B --quant --default --no-kdec --no-i8 --reps 10 --routings 2 --only qwen3-30b-a3b \
      --qtypes q4_K,q6_K,q8_0,mxfp4 --qtokens 24,32,36,40,48 --json $W/r${r}a_$v.jsonl > $W/out_r${r}a_$v.log 2>>$W/err.log
  done
  for v in nt8 nt4; do
    e=""; [ $v = nt4 ] && e="MOE_SV_NT1=4 MOE_SV_NT2=4"
    env $e timeout 100 $B --quant --no-kdec --no-i8 --reps 10 --routings 2 --only qwen3-30b-a3b --qtypes q3_K,q2_K \
      --qtokens 32,40,48,64 --json $W/r${r}b_$v.jsonl > $W/out_r${r}b_$v.log 2>>$W/err.log
    env $e timeout 100 $B --quant --no-kdec --no-i8 --reps 10 --routings 2 --only mixtral-8x7b --qtypes q3_K,q2_K \
      --qtokens 8,10,16,32 --json $W/r${r}c_$v.jsonl > $W/out_r${r}c_$v.log 2>>$W/err.log
  done
done
D=$(dirname $0)
python3 $D/../s26/ab_table.py $W/r*a_old.jsonl $W/r*a_new.jsonl > $W/ab_rule.txt 2>&1
python3 $D/../s26/ab_table.py $W/r*_nt8.jsonl $W/r*_nt4.jsonl > $W/ab_nt4.txt 2>&1
tar cJf $OUT/call15.tar.xz -C $W .
grep default $W/ab_rule.txt; cat $W/ab_nt4.txt; tail -3 $W/err.log
