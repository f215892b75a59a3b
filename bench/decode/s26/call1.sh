#!/bin/bash
# Session 26, device call 1: per-block timelines of the streaming kernels at T = 1 (where issue 6's quantised
# decode loses ~20 us to something other than bytes: mixtral / deepseek-v3 Q4_K 68 / 67 us for 198 MB, Q8_0
# 109 / 105 us for 374 MB), GGUF and dense, and the run-time split (MOE_SV_DYN=2) beside the planned grid.
# bench_decode_tl: bench_decode linked against libmoe_internal.a with decode_stream.cu and decode.cu rebuilt
# with bench/decode/s26/stream_timeline.patch applied (ar r into a copy of the archive).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call1.sh
W=/tmp/w1; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
B=/tmp/b/bench_decode_tl
export MOE_SV_TIMELINE=1
run() { # name, env..., -- args
  local name=$1; shift; local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== $name" >> $W/tl.log
  env "${envs[@]}" timeout 120 $B "$@" --reps 5 >> $W/tl.log 2>&1
}
for p in mixtral-8x7b deepseek-v3; do
  for q in q4_K q8_0; do
    run "$p $q T=1" X=1 -- --quant --no-kdec --no-i8 --only $p --qtypes $q --qtokens 1
    run "$p $q T=1 DYN=2" MOE_SV_DYN=2 -- --quant --no-kdec --no-i8 --only $p --qtypes $q --qtokens 1
  done
done
run "mixtral-8x7b mxfp4 T=1" X=1 -- --quant --no-kdec --no-i8 --only mixtral-8x7b --qtypes mxfp4 --qtokens 1
run "gpt-oss-20b mxfp4 T=1" X=1 -- --quant --no-kdec --no-i8 --only gpt-oss-20b --qtypes mxfp4 --qtokens 1
run "gpt-oss-120b mxfp4 T=1" X=1 -- --quant --no-kdec --no-i8 --only gpt-oss-120b --qtypes mxfp4 --qtokens 1
run "qwen3-30b-a3b q4_K T=1" X=1 -- --quant --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes q4_K --qtokens 1
run "qwen3-30b-a3b q8_0 T=1" X=1 -- --quant --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes q8_0 --qtokens 1
for p in qwen3-30b-a3b mixtral-8x7b deepseek-v3; do
  run "$p bf16 T=1" X=1 -- --dense --no-kdec --only $p --dtokens 1
done
python3 $(dirname $0)/tl_table.py $W/tl.log > $W/tl_table.txt 2>&1
grep -E "^(mixtral|deepseek|gpt|qwen)" $W/tl.log | sed -E 's/  +/ /g' > $W/times.txt
tar cJf $OUT/call1.tar.xz -C $W .
cat $W/times.txt; cat $W/tl_table.txt
