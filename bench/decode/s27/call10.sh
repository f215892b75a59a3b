#!/bin/bash
# Session 27, device call 10: the streaming kernels' knobs on the small-expert layers at T = 6-16, where
# they run at 32-64% of read (qwen3 GGUF, gpt-oss MXFP4 / Q8_0): the run-time split at every T
# (MOE_SV_DYN=2; by default T = 3..8) and groups of at most 4 pairs (MOE_SV_NT1=4 MOE_SV_NT2=4), against
# the default, forced streaming, three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call10.sh
W=/tmp/w10; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --no-kdec --no-i8 --reps 15 --routings 2"
for r in 1 2 3; do
  for v in base dyn nt4; do
    e=""; [ $v = dyn ] && e="MOE_SV_DYN=2"; [ $v = nt4 ] && e="MOE_SV_NT1=4 MOE_SV_NT2=4"
    env $e timeout 100 $B $A --only qwen3-30b-a3b --qtypes q4_K,q8_0,mxfp4,q6_K --qtokens 6,8,12,16,24 \
      --json $W/r${r}a_$v.jsonl > $W/out_r${r}a_$v.log 2>>$W/err.log
    env $e timeout 100 $B $A --only gpt-oss-20b,gpt-oss-120b --qtypes mxfp4,q8_0 --qtokens 8,12,16 \
      --json $W/r${r}b_$v.jsonl > $W/out_r${r}b_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_dyn.jsonl $W/r*_nt4.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call10.tar.xz -C $W .
cat $W/ab_table.txt; tail -3 $W/err.log
