#!/bin/bash
# Session 30, device call 8 (H100, the binary of calls 6-7): h quantised by phase 1 at T = 8-16, where
# runs 6-7 had it 0.98-1.01 (T = 8) and 0.99-1.017 (T = 16): the default against MOE_SV_HQ=0 at
# T = 8, 12, 16, the default layer, three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carry6 bash bench/decode/s30/call8.sh
W=/tmp/w8
. $(dirname $0)/lib.sh
s30_unpack
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for v in hq0 new; do
    E=; [ $v = hq0 ] && E="MOE_SV_HQ=0"
    env $E timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 8,12,16 --json $W/r${r}_$v.jsonl \
      > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_hq0.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call8.tar.xz -C $W .
grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$8}'; tail -3 $W/err.log
