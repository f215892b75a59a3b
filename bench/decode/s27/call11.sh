#!/bin/bash
# Session 27, device call 11: the run-time split at T = 9-16 (MOE_SV_DYN=2 against the default), forced streaming,
# on the layers a rule "T * K <= 64" would add: gpt-oss (K = 4) at T = 9-16 and mixtral (K = 2) at T = 10-16;
# three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call11.sh
W=/tmp/w11; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --no-kdec --no-i8 --reps 15 --routings 2"
for r in 1 2 3; do
  for v in base dyn; do
    e=""; [ $v = dyn ] && e="MOE_SV_DYN=2"
    env $e timeout 100 $B $A --only mixtral-8x7b --qtypes q4_K,q8_0,mxfp4 --qtokens 10,12,16 \
      --json $W/r${r}a_$v.jsonl > $W/out_r${r}a_$v.log 2>>$W/err.log
    env $e timeout 100 $B $A --only gpt-oss-20b,gpt-oss-120b --qtypes mxfp4,q8_0 --qtokens 9,10,12,14,16 \
      --json $W/r${r}b_$v.jsonl > $W/out_r${r}b_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_dyn.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call11.tar.xz -C $W .
cat $W/ab_table.txt; tail -3 $W/err.log
