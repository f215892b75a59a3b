#!/bin/bash
# Session 26, device call 7: per-block timelines of the final tree at T = 1 (bench_decode_tl: the tree with
# bench/decode/s26/stream_timeline.patch applied to decode_stream.cu and decode.cu, as in call 1).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call7.sh
W=/tmp/w7; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
B=/tmp/b/bench_decode_tl
export MOE_SV_TIMELINE=1
run() { echo "== $1" >> $W/tl.log; shift; timeout 120 $B "$@" --reps 5 >> $W/tl.log 2>&1; }
for q in q4_K q8_0 mxfp4; do run "qwen3-30b-a3b $q T=1" --quant --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes $q --qtokens 1; done
run "gpt-oss-20b mxfp4 T=1" --quant --no-kdec --no-i8 --only gpt-oss-20b --qtypes mxfp4 --qtokens 1
for q in q4_K q8_0; do for p in mixtral-8x7b deepseek-v3; do
  run "$p $q T=1" --quant --no-kdec --no-i8 --only $p --qtypes $q --qtokens 1
done; done
for p in qwen3-30b-a3b gpt-oss-20b mixtral-8x7b; do run "$p bf16 T=1" --dense --no-kdec --only $p --dtokens 1; done
python3 $(dirname $0)/tl_table.py $W/tl.log > $W/tl_table.txt 2>&1
grep -E "^(mixtral|deepseek|gpt|qwen)" $W/tl.log | sed -E 's/  +/ /g' > $W/times.txt
tar cJf $OUT/call7.tar.xz -C $W .
cat $W/times.txt; cat $W/tl_table.txt
