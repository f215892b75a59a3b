#!/bin/bash
# Session 29, device call 7: the single launch (k_svf) with MXFP4's 8-byte records where they cost it
# ring depth (decode.cu, MOE_SV_MXFP4_FUSED_RB=1: kept wherever 2 stages remain; by default the records
# go back to 4 bytes there: gpt-oss / mixtral T = 4 ran 1.000 in run 6). Tests with the knob; then
# three variants in one binary (default; fused8: the knob; rb4: MOE_SV_MXFP4_RB=4) at T = 2-6, three
# rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s29/call7.sh
W=/tmp/w7; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2907
for t in cuda_quant_cases cuda_quant_stream_ cuda_quant_sweep_; do
  ( MOE_SV_MXFP4_FUSED_RB=1 timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_f8_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for v in default fused8 rb4; do
    E=; [ $v = rb4 ] && E="MOE_SV_MXFP4_RB=4"; [ $v = fused8 ] && E="MOE_SV_MXFP4_FUSED_RB=1"
    env $E timeout 150 $B $A --only $P --qtypes mxfp4 --qtokens 2,3,4,6 --json $W/r${r}_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_default.jsonl $W/r*_fused8.jsonl $W/r*_rb4.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call7.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
