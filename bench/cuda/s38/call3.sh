#!/bin/bash
# Session 38 run 3: raster bands on the register-A kernel. ncu (run 2) had mixtral T = 2048's GEMM 1 on it
# read 5.4 GB from DRAM (the token-major kernel 3.2) for 1.9 GB of weights: bands of 16 token tiles of 256 rows
# (33 MB of x rows) do not stay in L2 beside the weights. The layer A/B of MOE_SM90_TN=1 with MOE_SM90_RASTER
# 2 / 4 (both GEMMs) against it and the default, then bench_decode --prefill on GGUF blocks (the same kernel)
# under the same bands.
#   OUT=out CARRY=dir bash bench/cuda/s38/call3.sh
. bench/cuda/device_common.sh
dev_setup 3803
[ "${AB:-2}" != 0 ] && PYTHONUNBUFFERED=1 timeout ${ABT:-300} python3 bench/cuda/bench_layer.py --lib /tmp/b/libmoe.so \
  --backends "${ABBACKENDS:-cuda-sm90,cuda-sm90@MOE_SM90_TN=1,cuda-sm90@MOE_SM90_TN=1+MOE_SM90_RASTER=2,cuda-sm90@MOE_SM90_TN=1+MOE_SM90_RASTER=4}" \
  --ab ${AB:-2} --reps 5 --presets ${ABPRESETS:-mixtral-8x7b,qwen3-30b-a3b} --tokens ${ABTOKENS:-2048,4096} \
  --out "$OUT/ab.json" 2>&1 | grep -E "^#|AB |failed|rror" | cut -c1-230
W=/tmp/wq; mkdir -p $W
VARIANTS=${VARIANTS:-"def: r2:MOE_SM90_RASTER=2 r4:MOE_SM90_RASTER=4"}
SPECS=${SPECS:-"mixtral-8x7b:q4_K,q8_0:2048,4096 qwen3-30b-a3b:q4_K:4096"}
for vv in $VARIANTS; do
  IFS=: read v e <<< "$vv"
  for sp in $SPECS; do
    IFS=: read p q t <<< "$sp"
    env $e timeout 150 /tmp/b/bench_decode --prefill --prefill-nodeq --reps 10 --only $p --qtypes $q --prefill-tokens $t \
      --json $W/r1_$v.jsonl >> $W/out_$v.log 2>>$W/err.log
  done
done
python3 bench/decode/s36/prefill_ab.py $(for vv in $VARIANTS; do echo $W/r1_${vv%%:*}.jsonl; done) > $W/ab_table.txt 2>&1
cp $W/*.jsonl $W/ab_table.txt $OUT/; cat $W/ab_table.txt; tail -3 $W/err.log
dev_gpu
exit 0
