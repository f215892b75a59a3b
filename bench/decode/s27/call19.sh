#!/bin/bash
# Session 27, device call 19 (H100): the session's new hand-overs checked on the other GPU: every path and
# the default on the same routings at the points they moved (dense mixtral / qwen3 T = 2; mixtral Q8_0
# T = 4-12, Q4_K T = 5-8; deepseek-v3 Q4_K T = 4-12; qwen3 Q4_K / Q8_0 T = 32-48), and the GGUF down form
# (deepseek-v3 Q8_0 T = 16-24: the default against MOE_SV_DOWNE=0). Two rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call19.sh
W=/tmp/w19; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
B=/tmp/b/bench_decode
Q="--quant --default --no-kdec --reps 10 --routings 2"
for r in 1 2; do
  timeout 100 $B --dense --default --cross --only qwen3-30b-a3b,mixtral-8x7b --dtokens 2,3 --ctokens 2,3 --reps 10 --routings 2 \
    --json $W/r${r}_d.jsonl > $W/out_r${r}_d.log 2>>$W/err.log
  timeout 100 $B $Q --only mixtral-8x7b --qtypes q8_0,q4_K --qtokens 4,5,6,8,12 --json $W/r${r}_a.jsonl > $W/out_r${r}_a.log 2>>$W/err.log
  timeout 100 $B $Q --only deepseek-v3 --qtypes q4_K --qtokens 4,6,12 --json $W/r${r}_b.jsonl > $W/out_r${r}_b.log 2>>$W/err.log
  timeout 100 $B $Q --only qwen3-30b-a3b --qtypes q4_K,q8_0 --qtokens 32,40,48 --json $W/r${r}_c.jsonl > $W/out_r${r}_c.log 2>>$W/err.log
  for v in old new; do
    e=""; [ $v = old ] && e="MOE_SV_DOWNE=0"
    env $e timeout 100 $B --quant --default --no-kdec --no-i8 --reps 10 --routings 2 --only deepseek-v3 --qtypes q8_0 \
      --qtokens 12,16,24 --json $W/r${r}e_$v.jsonl > $W/out_r${r}e_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/paths_table.py --variants stream,kdec,i8,gemm-sm90,gemm-jit,default $W/r?_[dabc].jsonl > $W/paths.txt
python3 $(dirname $0)/../s26/ab_table.py $W/r*e_old.jsonl $W/r*e_new.jsonl > $W/ab_down.txt 2>&1
tar cJf $OUT/call19.tar.xz -C $W .
cat $W/gpu.txt; cat $W/paths.txt; grep default $W/ab_down.txt; tail -3 $W/err.log
