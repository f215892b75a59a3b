#!/bin/bash
# Session 6, run 7: (1) head against new on the presets the standard --quant table
# leaves out (mixtral-8x7b, deepseek-v3, gpt-oss-120b; Q4_K where D and I allow it,
# Q8_0), both binaries built from this bench source (head linked against 993a736's
# library); (2) the streaming kernels against the mma decode kernels (kdec) at
# T = 16..64 on qwen3 and gpt-oss-20b, where the default hands T > 16 to kdec.
#   OUT=out bash bench/decode/run_s6_more.sh   (build-devbin/carry/bench_decode{,_head}.gz)
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in build-devbin/carry/bench_decode*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
R=${REPS:-20}
for p in ${PRESETS:-mixtral-8x7b deepseek-v3 gpt-oss-120b}; do
  for v in head new; do
    b=/tmp/b/bench_decode; [ $v = head ] && b=/tmp/b/bench_decode_head
    timeout 150 $b --quant --only $p --qtypes q4_K,q8_0 --reps $R --json "$OUT/presets_$v.jsonl" >> "$OUT/presets_$v.log" 2>&1
  done
done
[ "$QT" = none ] || timeout 200 /tmp/b/bench_decode --quant --qtokens ${QT:-16,24,32,48,64} --reps $R --json "$OUT/cross.jsonl" > "$OUT/cross.log" 2>&1
python3 bench/decode/s6_tables.py "$OUT"
