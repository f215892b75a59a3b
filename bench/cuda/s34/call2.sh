#!/bin/bash
# Session 34 run 2: 2 x 1 units in the order of their first m-tile (MOE_SM90_PAIRS=0: split units last) and
# the skip of warpgroups without rows (MOE_SM90_SKIP=0: none). GPU tests, compute-sanitizer, ncu's DRAM
# bytes under each, then the layer A/B of both knobs against the default in one library.
#   OUT=out CARRY=dir [TESTS=..] [SAN="tool:test .."] [NCU="preset:T:K=V ..."] [AB=rounds ABPRESETS=.. ABTOKENS=..]
#   bash bench/cuda/s34/call2.sh
. bench/cuda/device_common.sh
dev_setup 3401
dev_tests
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
for v in $NCU; do
  IFS=: read -r p T env <<< "$v"
  b=cuda-decode; [ -n "$env" ] && b="cuda-decode@$env"
  nm=$(echo "$env" | tr '=+' '_-')  # '=' and '+' in a file name keep it from coming back
  timeout 150 ncu --clock-control none -k "regex:gemm" --metrics $M --launch-count 2 --csv --page raw \
    python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so --probe --backends "$b" --presets $p \
    --tokens $T --out /tmp/probe.json > "$OUT/ncu_${p}_${T}_${nm}.csv" 2>&1
  echo "== $p T=$T $env"; python3 bench/cuda/s33/ncu_raw.py "$OUT/ncu_${p}_${T}_${nm}.csv" | tail -n +2 | cut -c1-400
  xz -f "$OUT/ncu_${p}_${T}_${nm}.csv"
done
[ -n "$AB" ] && PYTHONUNBUFFERED=1 timeout ${ABT:-400} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --backends "${ABBACKENDS:-cuda-decode,cuda-decode@MOE_SM90_SKIP=0,cuda-decode@MOE_SM90_PAIRS=0}" --ab $AB --reps 5 \
  --presets ${ABPRESETS:-gpt-oss-120b,qwen3-30b-a3b,gpt-oss-20b,deepseek-v3,mixtral-8x7b} --tokens ${ABTOKENS:-4096,16384} \
  --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed" | cut -c1-220
dev_gpu
exit 0
