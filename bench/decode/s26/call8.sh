#!/bin/bash
# Session 26, device call 8: where the run-time split's routing goes (T = 3-8's default for GGUF blocks,
# 2-8 for dense rows): call 7's stamped build with the "waited" stamp of split gate/up blocks moved to just
# after sv_route_dyn (so: start -> waited = the block's own routing of all pairs, waited -> routed = the
# split, the proxy fence, the barriers' init and the block barrier). Two launches (MOE_DECODE_FUSED=0: the
# single cooperative launch has no stamps); MOE_SV_DYN=0 (the planned grid) beside it.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call8.sh
W=/tmp/w8; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode_tl
export MOE_SV_TIMELINE=1 MOE_DECODE_FUSED=0
run() { echo "== $1" >> $W/tl.log; shift; timeout 120 env "$@" --reps 5 >> $W/tl.log 2>&1; }
for T in 4 8; do
  for q in q4_K q8_0; do
    run "qwen3-30b-a3b $q T=$T" X=1 $B --quant --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes $q --qtokens $T
    run "qwen3-30b-a3b $q T=$T DYN=0" MOE_SV_DYN=0 $B --quant --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes $q --qtokens $T
  done
  run "gpt-oss-20b mxfp4 T=$T" X=1 $B --quant --no-kdec --no-i8 --only gpt-oss-20b --qtypes mxfp4 --qtokens $T
  run "gpt-oss-20b mxfp4 T=$T DYN=0" MOE_SV_DYN=0 $B --quant --no-kdec --no-i8 --only gpt-oss-20b --qtypes mxfp4 --qtokens $T
done
run "mixtral-8x7b q4_K T=4" X=1 $B --quant --no-kdec --no-i8 --only mixtral-8x7b --qtypes q4_K --qtokens 4
run "mixtral-8x7b q4_K T=4 DYN=0" MOE_SV_DYN=0 $B --quant --no-kdec --no-i8 --only mixtral-8x7b --qtypes q4_K --qtokens 4
run "qwen3-30b-a3b bf16 T=4" X=1 $B --dense --no-kdec --only qwen3-30b-a3b --dtokens 4
run "qwen3-30b-a3b bf16 T=4 DYN=0" MOE_SV_DYN=0 $B --dense --no-kdec --only qwen3-30b-a3b --dtokens 4
python3 $(dirname $0)/tl_table.py $W/tl.log > $W/tl_table.txt 2>&1
grep -E "^(mixtral|deepseek|gpt|qwen)" $W/tl.log | sed -E 's/  +/ /g' > $W/times.txt
tar cJf $OUT/call8.tar.xz -C $W .
cat $W/times.txt; cat $W/tl_table.txt
