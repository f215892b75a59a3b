#!/bin/bash
# (Its test block became s30_run_tests in ../s30/lib.sh after the session's runs: the same lines.)
# Session 35, device call 5: the final build's decode and quant GPU tests (one filter a process, in parallel),
# and the host decode tests.
#   RUN=5 OUT=out CARRY=build-gpu/carryN bash bench/decode/s35/call5.sh
RUN=${RUN:-5}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=350$RUN
( timeout 100 /tmp/b/moe-tests decode_ ) > $W/tests_host_decode_.log 2>&1
s30_run_tests "cuda_quant_cases cuda_quant_sweep_T cuda_quant_stream_ cuda_quant_graph_capture cuda_quant_i8_
  cuda_quant_prefill_forced cuda_decode_ cuda_stream_" ${TT:-420}
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt
