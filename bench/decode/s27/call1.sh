#!/bin/bash
# Session 27, device call 1: (a) what an empty launch costs between the bench's events (probe_launch);
# (b) qwen3 dense T = 1 as one cooperative launch (MOE_DECODE_FUSED=1) against the two PDL launches;
# (c) lab knob MOE_SV_WAVES = 2, 3 (the planned grids' rows a block divided so the hardware's block
# scheduler balances SMs that stream at different rates) against 1, T = 1 dense and GGUF.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call1.sh
W=/tmp/w1; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
/tmp/b/probe_launch > $W/probe.log 2>&1
B=/tmp/b/bench_decode
for r in 1 2 3; do
  for v in two one; do
    f=0; [ $v = one ] && f=1
    MOE_LOG=info MOE_DECODE_FUSED=$f timeout 60 $B --dense --default --no-kdec --only qwen3-30b-a3b --dtokens 1 \
      --reps 30 --routings 2 --json $W/f${r}_$v.jsonl > $W/out_f${r}_$v.log 2>&1
  done
done
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3
for r in 1 2; do
  for v in 1 2 3; do
    MOE_SV_WAVES=$v timeout 100 $B --dense --default --no-kdec --only $P,gpt-oss-120b --dtokens 1 --reps 20 --routings 2 \
      --json $W/w${r}d_w$v.jsonl > $W/out_w${r}d_w$v.log 2>>$W/err.log
    MOE_SV_WAVES=$v timeout 150 $B --quant --default --no-kdec --no-i8 --only $P --qtypes q4_K,q8_0 --qtokens 1 \
      --reps 20 --routings 2 --json $W/w${r}q_w$v.jsonl > $W/out_w${r}q_w$v.log 2>>$W/err.log
  done
done
D=$(dirname $0)
python3 $D/../s26/ab_table.py $W/f*_two.jsonl $W/f*_one.jsonl > $W/fused_table.txt 2>&1
python3 $D/../s26/ab_table.py $W/w*_w1.jsonl $W/w*_w2.jsonl $W/w*_w3.jsonl > $W/waves_table.txt 2>&1
grep -h "two launches\|single" $W/out_f1_one.log | head -3 > $W/fused_log.txt
tar cJf $OUT/call1.tar.xz -C $W .
cat $W/probe.log; cat $W/fused_log.txt; cat $W/fused_table.txt; cat $W/waves_table.txt; tail -3 $W/err.log
