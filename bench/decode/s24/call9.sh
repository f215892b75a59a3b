#!/bin/bash
# Session 24, device call 9: the final tree's other GPU tests (moe_cuda_gemm grew two fields, read by every
# GEMM kernel: the sm80 kernels, the decode and streaming paths, bad ids and graph capture).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s24/call9.sh
W=/tmp/w9; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2424
for t in cuda_cases_sm80 cuda_decode cuda_stream cuda_bad_ids_graph cuda_quant_stream; do
  ( timeout 280 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "^FAIL|FAILED|error" $W/tests_*.log | head -20
tar cJf $OUT/call9.tar.xz -C $W .
