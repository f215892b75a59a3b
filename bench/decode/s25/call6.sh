#!/bin/bash
# Session 25, device call 6: the final tree's other cuda-quant and cuda-decode GPU tests (sweeps over T, graph
# capture, int8 and streaming tests: the hand-overs moved Q4_0, Q2_K and Q3_K layers onto the GGUF GEMMs from
# 3-14 pairs an expert), and the layer a user gets at run 5's Q2_K / Q3_K hand-overs on mixtral and deepseek-v3.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s25/call6.sh
W=/tmp/w6; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2528
B=/tmp/b/bench_decode
for t in cuda_quant_sweep_ cuda_quant_graph_capture cuda_quant_i8 cuda_quant_stream cuda_decode; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "^FAIL|FAILED|error" $W/tests_*.log | head -20
( timeout 60 $B --quant --default --no-kdec --no-i8 --only mixtral-8x7b --qtypes q2_K,q3_K --qtokens 20,24,36,40 \
    --reps 5 ; \
  timeout 80 $B --quant --default --no-kdec --no-i8 --only deepseek-v3 --qtypes q2_K,q3_K --qtokens 160,192,224,256 \
    --reps 3 ) > $W/default.log 2>&1
echo "== default (rc $?)"
grep -hE " default " $W/default.log | sed -E 's/  +/ /g'
tar cJf $OUT/call6.tar.xz -C $W .
