#!/bin/bash
# Session 19: the streaming kernels' stage size / ring depth at small T (knobs
# MOE_SV_STAGE, MOE_SV_NS of decode.cu sv_plan), default first, alternating rounds.
#   OUT=out CARRY=dir KNOBS="- MOE_SV_STAGE=20000 ..." PRESETS="mixtral-8x7b deepseek-v3" bash bench/decode/s19/knobs_t1.sh
# (ROW=i8 BENCH_FLAGS=" " with MOE_QG_* knobs: the int8 kernels' row; knobs_table.py OUT i8)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry}/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
for round in $(seq ${ROUNDS:-2}); do
  for k in ${KNOBS:--}; do
    for p in ${PRESETS:-mixtral-8x7b}; do
      e=""; [ "$k" = - ] || e="$k"
      env ${e//,/ } /tmp/b/bench_decode --quant --only $p --qtypes ${QTYPES:-q4_K,q6_K,q8_0,mxfp4} --qtokens ${TOKENS:-1,2,4} \
        --no-kdec ${BENCH_FLAGS:---no-i8} --routings ${ROUTINGS:-2} --reps 3 --json "$OUT/knob_${round}_${k//[=,]/_}.jsonl" 2>&1 |
        grep -E " ${ROW:-stream} " | sed -E 's/ +\(.*//;s/^/'"$round $k"' /'
    done
  done
done
