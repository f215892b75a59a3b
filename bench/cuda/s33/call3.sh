#!/bin/bash
# Session 33 run 3: the GEMMs' units in dynamic order. GPU tests (case tables in both orders, the
# order test, graphs), compute-sanitizer, then the layer A/B of the static order (MOE_SM90_SCHED=0)
# against the default in one library, and ncu's DRAM bytes of gpt-oss-120b's GEMMs.
#   OUT=out CARRY=dir [TESTS=..] [SAN="tool:test .."] [AB=rounds] [PRESETS=..] [TOKENS=..] bash bench/cuda/s33/call3.sh
. bench/cuda/device_common.sh
dev_setup 3303
dev_tests
[ -n "$AB" ] && PYTHONUNBUFFERED=1 timeout ${ABT:-400} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --backends "cuda-decode@MOE_SM90_SCHED=0,cuda-decode" --ab $AB --reps 5 \
  --presets ${PRESETS:-gpt-oss-120b,qwen3-30b-a3b,gpt-oss-20b,deepseek-v3,mixtral-8x7b} --tokens ${TOKENS:-512,4096,16384} \
  --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed" | cut -c1-220
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum
for v in $NCU; do
  IFS=: read -r p T env <<< "$v"
  env $env timeout 120 ncu --clock-control none -k "regex:gemm" --metrics $M --launch-count 2 --csv --page raw \
    python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends cuda-decode --presets $p \
    --tokens $T --out /tmp/probe.json > "$OUT/ncu_${p}_${T}_${env}.csv" 2>&1
  echo "== $p T=$T $env"; python3 bench/cuda/s33/ncu_raw.py "$OUT/ncu_${p}_${T}_${env}.csv" | tail -n +2
done
dev_gpu
exit 0
