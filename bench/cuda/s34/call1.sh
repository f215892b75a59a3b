#!/bin/bash
# Session 34 run 1: where qwen3 T = 4096 and deepseek-v3 T = 16384 lose. ncu's time, SM clock, DRAM and
# L2 bytes and throughput of both GEMMs for variants of the schedule, then the layer A/B of qwen3's.
#   OUT=out CARRY=dir [V="name:preset:T:K=V+K=V:routing ..."] [AB=rounds] bash bench/cuda/s34/call1.sh
. bench/cuda/device_common.sh
dev_setup ""
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
V=${V:-"def:qwen3-30b-a3b:4096:: bal:qwen3-30b-a3b:4096::balanced st:qwen3-30b-a3b:4096:MOE_SM90_SCHED=0: c21:qwen3-30b-a3b:4096:MOE_SM90_CM=2: c21g:qwen3-30b-a3b:4096:MOE_SM90_CM=2+MOE_SM90_GATHER=1: copy:qwen3-30b-a3b:4096:MOE_SM90_GATHER=0: def:deepseek-v3:16384:: def:mixtral-8x7b:16384::"}
for v in $V; do
  IFS=: read -r nm p t env rt <<< "$v"
  b=cuda-decode; [ -n "$env" ] && b="cuda-decode@$env"
  timeout 150 ncu --clock-control none -k "regex:gemm" --metrics $M --launch-count 2 --csv --page raw \
    python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends "$b" --presets $p \
    --routing ${rt:-random} --tokens $t --out /tmp/probe.json > "$OUT/ncu_${p}_${t}_$nm.csv" 2>&1
  python3 bench/cuda/s33/ncu_raw.py "$OUT/ncu_${p}_${t}_$nm.csv"
  xz -f "$OUT/ncu_${p}_${t}_$nm.csv"
done
if [ -n "$AB" ]; then
  bs=$(for v in $V; do IFS=: read -r nm q t env rt <<< "$v"; [ $q = qwen3-30b-a3b ] && [ -z "$rt" ] && { [ -n "$env" ] && echo -n "cuda-decode@$env," || echo -n "cuda-decode,"; }; done)
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --backends ${bs%,} \
    --ab $AB --reps 5 --presets qwen3-30b-a3b --tokens 4096 --out "$OUT/ab_qwen3.json" 2>&1 | grep -E "^#|AB |failed" | cut -c1-220
fi
dev_gpu
exit 0
