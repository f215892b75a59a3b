#!/bin/bash
# Session 23, device call 3: deepseek-v3 Q4_K T = 4096 ran 8-10% slower on the new kernels than on the
# session's start in call 2 (qwen3 11% faster). Per-kernel durations under ncu (clocks fixed) for
# base / new / nostg, then the bench again with the order reversed (base first), two rounds.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s23/call3.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
A="--prefill --prefill-nodeq --qtypes q4_K --reps 3 --only deepseek-v3"
for v in base new nostg; do
  b=/tmp/b/bench_decode; [ $v = new ] || b=/tmp/b/bench_decode_$v
  timeout 100 ncu --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size \
    -k regex:gemm_sm90_qs --launch-count 6 --csv $b $A --prefill-tokens 4096 > $W/ncu_$v.csv 2> $W/ncu_$v.err
  echo "== ncu $v (rc $?)"
  grep -E "gpu__time_duration|launch__grid" $W/ncu_$v.csv | awk -F'","' '{print $1, substr($5,1,60), $(NF-2), $NF}'
done
for r in 1 2; do
  for v in base nostg new; do
    b=/tmp/b/bench_decode; [ $v = new ] || b=/tmp/b/bench_decode_$v
    timeout 60 $b --prefill --prefill-nodeq --qtypes q4_K,q8_0 --reps 10 --only deepseek-v3,qwen3-30b-a3b \
      --prefill-tokens 4096 --json $W/p_${v}_$r.jsonl > $W/p_${v}_$r.log 2>&1
    echo "== $v $r: $(grep -E '^prefill' $W/p_${v}_$r.log | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/' | awk '{printf "%s %s %s | ", $2, $3, $7}')"
  done
done
tar cJf $OUT/call3.tar.xz -C $W .
